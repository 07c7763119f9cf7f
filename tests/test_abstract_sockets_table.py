"""When an editor terminal's command pays for the abstract-socket scope: only where the
host's network namespace has an abstract socket to reach (`/proc/net/unix`), since the
scope is a Python started before the command's shell (~25 ms a command, and Zed runs every
command in its terminal)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_core.sandbox import abstract_sockets
from hermes_core.sandbox.probe import bundled_bwrap

HEADER = "Num       RefCount Protocol Flags    Type St Inode Path\n"
PATH_ONLY = (
    "000000007524d37d: 00000003 00000000 00000000 0001 03  1202\n"
    "0000000095a840f3: 00000002 00000000 00010000 0001 01  1201 /run/user/0/bus\n"
)
X11 = "00000000d1c2b3a4: 00000002 00000000 00010000 0001 01  3310 @/tmp/.X11-unix/X0\n"


def table(tmp_path: Path, text: str) -> str:
    path = tmp_path / "unix"
    path.write_text(HEADER + text)
    return str(path)


def test_a_host_with_an_abstract_socket_is_seen(tmp_path: Path) -> None:
    assert abstract_sockets.has_abstract_sockets(table(tmp_path, PATH_ONLY + X11))
    assert not abstract_sockets.has_abstract_sockets(table(tmp_path, PATH_ONLY))


def test_an_unreadable_table_counts_as_sockets_to_scope(tmp_path: Path) -> None:
    assert abstract_sockets.has_abstract_sockets(str(tmp_path / "missing"))


def test_the_editor_terminal_pays_for_the_scope_only_where_there_is_something_to_reach(
    tmp_path: Path,
) -> None:
    bwrap = bundled_bwrap()
    if bwrap is None or abstract_sockets._ruleset(bwrap) is None:
        pytest.fail("this machine's kernel scopes abstract sockets (6.12+): the test needs it")
    argv = ["/bin/sh", "-c", "true"]
    assert abstract_sockets.scoped_exec(argv, bwrap, "/usr/bin/python3", table(tmp_path, PATH_ONLY)) == argv
    scoped = abstract_sockets.scoped_exec(argv, bwrap, "/usr/bin/python3", table(tmp_path, PATH_ONLY + X11))
    assert scoped[:3] == ["/usr/bin/python3", "-I", "-S"] and scoped[-3:] == argv
