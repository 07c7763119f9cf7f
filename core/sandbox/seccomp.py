"""A seccomp filter for every sandboxed command: the few system calls an everyday build
never needs and an attacker would (issue 19).

- **Set-user-ID and set-group-ID files.** Run as root (CI, containers), a sandboxed command
  keeps CAP_FOWNER and CAP_CHOWN (`probe.ROOT_FILE_CAPS`), so `chmod 4755` on a copy of a
  shell left a root shell in the workspace for whoever runs it later, another user on the
  machine too. So `chmod`, `fchmod`, `fchmodat`, `fchmodat2`, and `open`, `openat`,
  `creat`, `mkdir`, `mknod` (creating), fail with EPERM when the mode asks for S_ISUID or
  S_ISGID. `openat2` hides its mode behind a pointer: it fails with ENOSYS, and libc and
  the programs that use it fall back to `openat`. File capabilities (`security.capability`)
  need CAP_SETFCAP, which no sandboxed command has.
- **io_uring** opens files without passing through the filter above: ENOSYS (programs
  fall back to plain system calls, as under Docker's default profile).
- **The kernel keyring** (`keyctl`, `add_key`, `request_key`): the user's keyring is shared
  with every process of the uid, the sandbox's included.
- **TIOCSTI and TIOCLINUX**: typing into a terminal the command shares (an editor's).
- **bpf, perf_event_open, userfaultfd**: kernel attack surface a build does not use.

The program is classic BPF, built once per process for this machine's architecture
(x86-64 with its i386 system calls, aarch64); on another architecture there is no filter
(`program()` is None) and the README's promise does not hold there. A foreign ABI the
program does not know (x32, 32-bit ARM) gets EPERM for every call.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import functools
import os
import platform
import shutil
import struct
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path

_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000

_NR, _ARCH = 0, 4


def _arg(index: int) -> int:
    return 16 + 8 * index  # its low 32 bits (little-endian): modes, flags, ioctl numbers


_SET_ID = 0o6000  # S_ISUID | S_ISGID
_CREATING = 0o100 | 0o20000000  # O_CREAT | __O_TMPFILE (the same on x86 and the generic table)
_TERMINAL_INPUT = (0x5412, 0x541C)  # TIOCSTI, TIOCLINUX


@dataclass(frozen=True, slots=True)
class Table:
    """One ABI's system call numbers."""

    arch: int  # AUDIT_ARCH_*
    modes: dict[int, int]  # a call → the argument holding the mode (chmod family, mkdir, mknod)
    opens: dict[int, tuple[int, int]]  # a call → (flags argument, mode argument); -1: always creates
    refused: dict[int, int]  # a call → the errno it fails with
    ioctl: int
    below: int | None = None  # numbers from here on belong to another ABI (x32)


_KEYS_AND_KERNEL = errno.EPERM
_X86_64 = Table(
    arch=0xC000003E,
    modes={90: 1, 91: 1, 268: 2, 452: 2, 83: 1, 258: 2, 133: 1, 259: 2},
    opens={2: (1, 2), 257: (2, 3), 85: (-1, 1)},
    refused={
        437: errno.ENOSYS,  # openat2
        425: errno.ENOSYS,  # io_uring_setup
        426: errno.ENOSYS,
        427: errno.ENOSYS,
        248: _KEYS_AND_KERNEL,  # add_key
        249: _KEYS_AND_KERNEL,  # request_key
        250: _KEYS_AND_KERNEL,  # keyctl
        321: _KEYS_AND_KERNEL,  # bpf
        298: _KEYS_AND_KERNEL,  # perf_event_open
        323: _KEYS_AND_KERNEL,  # userfaultfd
    },
    ioctl=16,
    below=0x40000000,
)
_I386 = Table(
    arch=0x40000003,
    modes={15: 1, 94: 1, 306: 2, 452: 2, 39: 1, 296: 2, 14: 1, 297: 2},
    opens={5: (1, 2), 295: (2, 3), 8: (-1, 1)},
    refused={
        437: errno.ENOSYS,
        425: errno.ENOSYS,
        426: errno.ENOSYS,
        427: errno.ENOSYS,
        286: _KEYS_AND_KERNEL,
        287: _KEYS_AND_KERNEL,
        288: _KEYS_AND_KERNEL,
        357: _KEYS_AND_KERNEL,
        336: _KEYS_AND_KERNEL,
        374: _KEYS_AND_KERNEL,
    },
    ioctl=54,
)
_AARCH64 = Table(
    arch=0xC00000B7,
    modes={52: 1, 53: 2, 452: 2, 34: 2, 33: 2},
    opens={56: (2, 3)},
    refused={
        437: errno.ENOSYS,
        425: errno.ENOSYS,
        426: errno.ENOSYS,
        427: errno.ENOSYS,
        217: _KEYS_AND_KERNEL,
        218: _KEYS_AND_KERNEL,
        219: _KEYS_AND_KERNEL,
        280: _KEYS_AND_KERNEL,
        241: _KEYS_AND_KERNEL,
        282: _KEYS_AND_KERNEL,
    },
    ioctl=29,
)
_TABLES: dict[str, tuple[Table, ...]] = {"x86_64": (_X86_64, _I386), "aarch64": (_AARCH64,)}


class _Program:
    """Classic BPF with forward jumps to labels, resolved at the end."""

    def __init__(self) -> None:
        self._code: list[tuple[int, str | int, str | int, int]] = []
        self._labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self._labels[name] = len(self._code)

    def load(self, offset: int) -> None:
        self._code.append((_LD_ABS, 0, 0, offset))

    def jump(self, op: int, value: int, true: str | int, false: str | int = 0) -> None:
        self._code.append((op, true, false, value))

    def ret(self, value: int) -> None:
        self._code.append((_RET, 0, 0, value))

    def bytes(self) -> bytes:
        out = bytearray()
        for index, (code, true, false, k) in enumerate(self._code):
            out += struct.pack("<HBBI", code, self._offset(index, true), self._offset(index, false), k)
        return bytes(out)

    def _offset(self, index: int, target: str | int) -> int:
        if isinstance(target, int):
            return target
        offset = self._labels[target] - index - 1
        assert 0 <= offset < 256, (target, offset)
        return offset


def _table(program: _Program, table: Table, name: str) -> None:
    """The checks of one ABI; the accumulator holds the call's number on entry."""
    if table.below is not None:
        program.jump(_JGE, table.below, "deny")
    for number in (*table.modes, *table.opens, *table.refused, table.ioctl):
        program.jump(_JEQ, number, f"{name}-{number}")
    program.ret(_ALLOW)
    for number, argument in table.modes.items():
        program.label(f"{name}-{number}")
        program.load(_arg(argument))
        program.jump(_JSET, _SET_ID, "deny", "allow")
    for number, (flags, mode) in table.opens.items():
        program.label(f"{name}-{number}")
        if flags >= 0:  # a mode counts only when the call creates the file
            program.load(_arg(flags))
            program.jump(_JSET, _CREATING, 0, "allow")
        program.load(_arg(mode))
        program.jump(_JSET, _SET_ID, "deny", "allow")
    for number, code in table.refused.items():
        program.label(f"{name}-{number}")
        program.ret(_ERRNO | code)
    program.label(f"{name}-{table.ioctl}")
    program.load(_arg(1))
    for request in _TERMINAL_INPUT:
        program.jump(_JEQ, request, "deny")
    program.ret(_ALLOW)


@functools.cache
def program() -> bytes | None:
    """The filter for this machine (None: an architecture without a table)."""
    tables = _TABLES.get(platform.machine())
    if tables is None:
        return None
    program = _Program()
    program.load(_ARCH)
    for table in tables:
        program.jump(_JEQ, table.arch, f"abi-{table.arch}")
    program.ret(_ERRNO | errno.EPERM)  # an ABI this filter does not know
    for table in tables:
        program.label(f"abi-{table.arch}")
        program.load(_NR)
        _table(program, table, f"t{table.arch}")
    program.label("allow")
    program.ret(_ALLOW)
    program.label("deny")
    program.ret(_ERRNO | errno.EPERM)
    return program.bytes()


@functools.cache
def program_file() -> Path | None:
    """The filter in a file of its own (0700 folder, 0400 file) that an editor's terminal
    launch opens for bwrap; no sandboxed command can write there (as `launcher`)."""
    code = program()
    if code is None:
        return None
    folder = Path(tempfile.mkdtemp(prefix="hermes-acp-seccomp-")).resolve()
    atexit.register(shutil.rmtree, str(folder), True)
    path = folder / "filter.bpf"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o400)
    with os.fdopen(fd, "wb") as out:
        out.write(code)
    return path


class SeccompFd:
    """The filter on a descriptor for one local launch (`pass_fds`), closed once started."""

    def __init__(self) -> None:
        code = program()
        self._fd: int | None = None
        self._closing: weakref.finalize[[int], SeccompFd] | None = None
        if code is not None:
            self._fd = os.memfd_create("hermes-acp-seccomp", os.MFD_CLOEXEC)
            # Also when a launch is cancelled before its fork; once only.
            self._closing = weakref.finalize(self, _close_quietly, self._fd)
            os.write(self._fd, code)
            os.lseek(self._fd, 0, os.SEEK_SET)

    def options(self) -> list[str]:
        return ["--add-seccomp-fd", str(self._fd)] if self._fd is not None else []

    @property
    def child_fds(self) -> tuple[int, ...]:
        return (self._fd,) if self._fd is not None else ()

    def close(self) -> None:
        if self._closing is not None:
            self._closing()
        self._fd = None


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


# The editor's terminal: bwrap reads the filter from a descriptor that a `sh` before it
# opens (no shell of ours runs there otherwise).
_FD_FOR_EDITOR = 3


def editor_prefix() -> tuple[list[str], list[str]]:
    """(argv before bwrap, bwrap options) that give an editor terminal's launch the filter."""
    path = program_file()
    if path is None:
        return [], []
    opening = f'exec "$@" {_FD_FOR_EDITOR}<"$0"'
    return ["/bin/sh", "-c", opening, str(path)], ["--add-seccomp-fd", str(_FD_FOR_EDITOR)]
