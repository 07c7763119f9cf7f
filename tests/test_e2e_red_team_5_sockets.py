"""A fifth attack round (issue 19's hidden red team): sockets through which a process runs
a command as the user, outside the sandbox, that lie where the fence did not look. End to
end through the real server with a scripted model in auto; each socket a real listening
one, each probe a sandboxed `python3 probe.py` (the model wrote it: nothing asks).

- A container engine's socket in the home, named by `DOCKER_HOST` / `CONTAINER_HOST`
  (Rancher Desktop's `~/.rd/docker.sock`, colima's, a rootless podman elsewhere): `docker
  run -v ~:/h …` runs anything outside the sandbox.
- A window manager's or terminal's IPC (`SWAYSOCK`, `I3SOCK`, `ALACRITTY_SOCKET`):
  `swaymsg exec CMD`, `alacritty msg create-window -e CMD`.
- The session bus and gpg-agent where their variables put them outside `/run/user`.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from tests.support.acp_harness import connected, server_env
from tests.support.fake_provider import FakeProvider, ToolCallSpec
from tests.support.red_team import LOCAL, run_turns, sandboxed, turn

PROBE = """import socket, sys
for path in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
        print("REACHED", path)
    except OSError as exc:
        print("refused", path, type(exc).__name__)
"""


@contextmanager
def listening(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(8)  # a connect succeeds on the backlog: nothing needs to accept
    try:
        yield
    finally:
        server.close()


def sockets(home: Path) -> dict[str, tuple[Path, str]]:
    """A variable, the socket it names, and how it names it."""
    rd, podman, sway = home / ".rd/docker.sock", home / "pm/podman.sock", home / "wm/sway.sock"
    alacritty, bus, gpg = home / "wm/alacritty.sock", home / "b/bus", home / "g/S.gpg-agent"
    return {
        "DOCKER_HOST": (rd, f"unix://{rd}"),
        "CONTAINER_HOST": (podman, f"unix://{podman}"),
        "SWAYSOCK": (sway, str(sway)),
        "I3SOCK": (sway, str(sway)),
        "ALACRITTY_SOCKET": (alacritty, str(alacritty)),
        "DBUS_SESSION_BUS_ADDRESS": (bus, f"unix:path={bus},guid=0123"),
        "GPG_AGENT_INFO": (gpg, f"{gpg}:0:1"),
    }


async def test_sockets_the_environment_names_outside_run_user_are_unreachable(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    named = sockets(home)
    paths = sorted({str(path) for path, _ in named.values()})
    write = ToolCallSpec("write_file", {"path": "probe.py", "content": PROBE}, id="w")
    fake.script(turn(write, sandboxed(f"python3 probe.py {' '.join(paths)}; echo probe-ran", "probe")))
    env = server_env(home, fake, **{name: value for name, (_, value) in named.items()})
    with ExitStack() as stack:
        for path in {path for path, _ in named.values()}:
            stack.enter_context(listening(path))
        async with connected(env, LOCAL) as (_, client):
            await run_turns(client, project, 1)
    results = [m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool"]
    assert "probe-ran" in results[-1] and results[-1].count("refused") == len(paths), results[-1]
    assert "REACHED" not in results[-1]
