"""How many of the project's modules one prompt runs: the size of what a reader must follow.

The real `hermes-acp --stdio` runs under a profiler hook that notes every project file
(`core/`, `hermes_acp/`) in which a Python function is called. The driver warms the session
with one prompt, then measures two more, each on its own: a plain text answer, and a turn in
which the model edits a file with `patch` (accept_edits, so no approval round trip). What a
turn runs is the set of files noted between the prompt being sent and its response.

    python -m benchmarks.prompt_modules [--list]

Run it with a worktree's interpreter to measure that worktree.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.fake_process import FakeProviderProcess  # noqa: E402
from tests.support.acp_harness import ServerProcess, server_env, spawn_server  # noqa: E402
from tests.support.fake_provider import Reply, ToolCallSpec  # noqa: E402

# Runs inside the server process: SIGUSR1 starts a fresh record, SIGUSR2 writes it out.
TRACED_SERVER = """
import os, signal, sys, threading
roots = tuple(os.path.join(os.environ["PROMPT_MODULES_ROOT"], d) + os.sep for d in ("core", "hermes_acp"))
seen = set()
def hook(frame, event, arg):
    if event == "call":
        name = frame.f_code.co_filename
        if name.startswith(roots):
            seen.add(name)
def start(*_):
    seen.clear()
def dump(*_):
    path = os.environ["PROMPT_MODULES_OUT"]
    with open(path + ".part", "w") as out:
        out.write("\\n".join(sorted(seen)))
    os.replace(path + ".part", path)  # the driver sees the file whole or not at all
signal.signal(signal.SIGUSR1, start)
signal.signal(signal.SIGUSR2, dump)
sys.setprofile(hook)
threading.setprofile(hook)
from hermes_acp.cli import main
sys.exit(main(["--stdio"]))
"""


async def traced_turn(server: ServerProcess, out: Path, request_id: int, session: str, text: str) -> set[str]:
    out.unlink(missing_ok=True)
    os.kill(server.pid, signal.SIGUSR1)
    reply = await server.request(
        request_id, "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
    )
    assert "result" in reply, reply
    os.kill(server.pid, signal.SIGUSR2)
    while not out.exists():  # the handler runs at the server's next bytecode; wait for its file
        await asyncio.sleep(0.01)
    root = str(ROOT) + os.sep
    return {line.removeprefix(root) for line in out.read_text().splitlines() if line}


async def measure() -> dict[str, set[str]]:
    with tempfile.TemporaryDirectory() as tmp, FakeProviderProcess() as fake:
        home, work = Path(tmp) / "home", Path(tmp) / "work"
        work.mkdir(parents=True)
        (work / "notes.txt").write_text("alpha\nbeta\n")
        out = Path(tmp) / "modules.txt"
        env = server_env(
            home,
            fake,
            HERMES_ACP_DEFAULT_MODE="accept_edits",
            HERMES_ACP_LOG_LEVEL="warning",
            PROMPT_MODULES_ROOT=str(ROOT),
            PROMPT_MODULES_OUT=str(out),
        )
        command = (sys.executable, "-c", TRACED_SERVER)
        async with spawn_server(env, command=command, cwd=work, check_schema=False) as server:
            reply = await server.request(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            assert "result" in reply, reply
            reply = await server.request(2, "session/new", {"cwd": str(work), "mcpServers": []})
            session = reply["result"]["sessionId"]
            fake.script([Reply(text="Warm.")])
            await server.request(
                3, "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}
            )
            fake.script([Reply(text="Hello from the model.")])
            plain = await traced_turn(server, out, 4, session, "say hello")
            patch = ToolCallSpec("patch", {"path": "notes.txt", "old_text": "beta", "new_text": "gamma"})
            fake.script([Reply(tool_calls=[patch]), Reply(text="Edited.")])
            edited = await traced_turn(server, out, 5, session, "change beta to gamma")
            assert (work / "notes.txt").read_text() == "alpha\ngamma\n", "the patch did not land"
    return {"plain text prompt": plain, "prompt with a patch": edited}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="name the modules too")
    args = parser.parse_args()
    turns = asyncio.run(measure())
    plain = turns["plain text prompt"]
    for name, modules in turns.items():
        extra = f" ({len(modules - plain)} beyond the plain prompt)" if modules is not plain else ""
        print(f"{name}: {len(modules)} project modules{extra}")
        if args.list:
            for module in sorted(modules):
                print(f"    {module}")
    print(json.dumps({name: len(modules) for name, modules in turns.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
