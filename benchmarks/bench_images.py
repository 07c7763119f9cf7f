"""The cost of downscaling an image in a confined child instead of in the agent process,
measured in one run against the in-process decode.

Three pictures a model is shown (a 4000x3000 photo as JPEG, a 3000x2000 screenshot as PNG,
a 3000x2000 WebP) are downscaled three ways, shuffled in one loop so load on the machine
hits all alike: in process (`image_child.downscaled`, what the agent did before), in a
child with an empty environment (the sandbox off), and in the session's sandbox made
read-only and without network (`image_decoder.downscale`, what it does now). A picture
that needs no downscaling (2000 px or less, 3.75 MB or less) is sent as it is and costs a
header read in every case, so only large ones pay. Prints each median and p90 and the
ratio of the medians to the in-process one, with the load average.

Run: python -m benchmarks.bench_images [--runs N]
"""

from __future__ import annotations

import argparse
import io
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from PIL import Image

from hermes_core.fence.scope import WorkspaceScope
from hermes_core.prompt.image_child import downscaled
from hermes_core.prompt.image_decoder import downscale
from hermes_core.sandbox.bwrap import Sandbox


def picture(kind: str, size: tuple[int, int]) -> bytes:
    image = Image.effect_noise(size, 40).convert("RGB")  # noise: no codec shortcut
    buffer = io.BytesIO()
    image.save(buffer, format=kind)
    return buffer.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    pictures = {
        "photo.jpg": (picture("JPEG", (4000, 3000)), "image/jpeg"),
        "screen.png": (picture("PNG", (3000, 2000)), "image/png"),
        "shot.webp": (picture("WEBP", (3000, 2000)), "image/webp"),
    }
    with tempfile.TemporaryDirectory() as folder:
        sandbox = Sandbox(WorkspaceScope(Path(folder)))
        assert sandbox.confinement == "sandboxed", sandbox.describe()
        ways: dict[str, Callable[[bytes, str], object]] = {
            "in process": downscaled,
            "child, no sandbox": lambda d, m: downscale(d, m, None),
            "child, sandboxed": lambda d, m: downscale(d, m, sandbox),
        }
        times: dict[tuple[str, str], list[float]] = {(n, w): [] for n in pictures for w in ways}
        plan = [(n, w) for n in pictures for w in ways] * runs
        random.shuffle(plan)
        for name, way in plan:
            data, mime = pictures[name]
            started = time.perf_counter()
            ways[way](data, mime)
            times[(name, way)].append(time.perf_counter() - started)
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}; {runs} runs each")
    for name in pictures:
        base = statistics.median(times[(name, "in process")])
        for way in ways:
            seen = sorted(times[(name, way)])
            median, p90 = statistics.median(seen), seen[int(len(seen) * 0.9) - 1]
            print(
                f"{name:11} {way:18} median {median * 1000:7.1f} ms  p90 {p90 * 1000:7.1f} ms"
                f"  x{median / base:.2f}"
            )


if __name__ == "__main__":
    main()
