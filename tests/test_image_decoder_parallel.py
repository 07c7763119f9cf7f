"""A reply's `read_file` calls run in parallel threads, and each large image is downscaled in
a child of the session's read-only decoder sandbox. Two at once made that sandbox's pids
cgroup twice, each launch moving into its own (one left behind) or into one already gone:
half of eight parallel decodes failed, and those images never reached the model."""

from __future__ import annotations

import io
import threading
from pathlib import Path

from PIL import Image

from hermes_core.prompt import image_decoder
from hermes_core.sandbox.bwrap import Sandbox
from hermes_core.workspace import WorkspaceScope


def encoded(kind: str, size: tuple[int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (200, 30, 30)).save(out, kind)
    return out.getvalue()


def test_a_replys_images_downscale_in_parallel_without_losing_one(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    sandbox = Sandbox(WorkspaceScope(project), home=tmp_path)
    assert sandbox.confinement == "sandboxed"
    images = [(encoded("PNG", (4000, 30)), "image/png"), (encoded("WEBP", (3000, 20)), "image/webp")] * 4
    failures: list[str] = []
    done: list[tuple[int, int]] = []

    def downscale(data: bytes, mime: str) -> None:
        try:
            small, _ = image_decoder.downscale(data, mime, sandbox)
        except image_decoder.DecodeRefused as refused:
            failures.append(str(refused))
            return
        with Image.open(io.BytesIO(small)) as image:
            done.append(image.size)

    for _ in range(3):
        threads = [threading.Thread(target=downscale, args=image) for image in images]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []
    assert sorted(set(done)) == [(2000, 13), (2000, 15)] and len(done) == 3 * len(images)
