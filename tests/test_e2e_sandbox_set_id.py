"""A sandboxed command cannot leave a set-user-ID or set-group-ID file, a file with
capabilities, or a key in the kernel keyring behind (issue 19).

Run as root (CI, containers), a sandboxed command keeps the file capabilities root needs
in a workspace another user owns; `chmod 4755` on a copy of a shell then left a root shell
for whoever ran it later. Every spelling below goes through a different system call.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import PLAIN_CAPABILITIES, connected, server_env
from tests.support.fake_provider import FakeProvider
from tests.support.red_team import LOCAL, run_turns, sandboxed, turn

ATTEMPTS = {
    "chmod": "cp /bin/sh s1; chmod 4755 s1",
    "chmod-g": "cp /bin/sh s2; chmod g+s s2",
    "install": "install -m 4755 /bin/sh s3",
    "python-open": "python3 -c \"import os; os.close(os.open('s4', os.O_CREAT | os.O_WRONLY, 0o6755))\"",
    "python-fchmod": "python3 -c \"import os; f = os.open('s5', os.O_CREAT | os.O_WRONLY, 0o755); "
    'os.fchmod(f, 0o4755)"',
    "mknod": "python3 -c \"import os, stat; os.mknod('s6', stat.S_IFREG | 0o4755)\"",
    "setcap": "python3 -c \"import os; open('s7', 'w').close(); "
    "os.setxattr('s7', 'security.capability', bytes.fromhex('0000000201000000010000000000000000000000'))\"",
}
EVERYDAY = (
    "mkdir -p d/e && echo hi > d/e/f && chmod 755 d/e/f && chmod -R g+w d && cp -a d d2 && echo everyday-ok"
)


@pytest.mark.parametrize("capabilities", [LOCAL, PLAIN_CAPABILITIES], ids=["local", "editor-terminal"])
async def test_no_sandboxed_command_leaves_a_set_id_file_or_capabilities(
    fake: FakeProvider, home: Path, project: Path, capabilities: dict[str, Any]
) -> None:
    calls = [sandboxed(line, name) for name, line in ATTEMPTS.items()]
    fake.script([r for call in [*calls, sandboxed(EVERYDAY, "everyday")] for r in turn(call)])
    async with connected(server_env(home, fake), capabilities) as (_, client):
        await run_turns(client, project, len(ATTEMPTS) + 1)
    planted = {
        path.name: oct(path.stat().st_mode)
        for path in project.rglob("*")
        if path.is_file() and path.stat().st_mode & (stat.S_ISUID | stat.S_ISGID)
    }
    assert planted == {}
    capable = [p.name for p in project.rglob("*") if p.is_file() and _has_capabilities(p)]
    assert capable == []
    results = [m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool"]
    assert "everyday-ok" in results[-1], results[-1]
    assert os.access(project / "d" / "e" / "f", os.X_OK)


def _has_capabilities(path: Path) -> bool:
    try:
        os.getxattr(path, "security.capability")
    except OSError:
        return False
    return True


async def test_the_sandbox_cannot_reach_the_kernel_keyring_or_type_into_a_terminal(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    probe = (
        "python3 - <<'EOF'\n"
        "import ctypes, errno, fcntl, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING = 0, -4\n"
        "r = libc.syscall(250, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0)\n"
        "print('keyring', 'refused' if r == -1 and ctypes.get_errno() == errno.EPERM else f'reached {r}')\n"
        "r = libc.syscall(425, 4, ctypes.create_string_buffer(120))\n"
        "print('io_uring', 'refused' if r == -1 and ctypes.get_errno() == errno.ENOSYS else f'reached {r}')\n"
        "EOF"
    )
    fake.script(turn(sandboxed(probe, "probe")))
    async with connected(server_env(home, fake), LOCAL) as (_, client):
        await run_turns(client, project, 1)
    [result] = [m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool"]
    assert "keyring refused" in result and "io_uring refused" in result, result
