"""Open a path beneath a directory without ever leaving it, decided by the kernel at open time.

Checking a path's name and then opening it loses a race against anything that can swap a
component for a symlink in between (a sandboxed background process, say). So the check
and the open are one step: Linux's openat2 with RESOLVE_BENEATH refuses, inside the
kernel, any `..` or symlink that would leave the directory; elsewhere (older kernels,
seccomp filters that deny openat2, macOS) a walk opens one component at a time with
O_NOFOLLOW relative to the previous directory's descriptor and follows a symlink only by
reading it and walking its target from the same place, so a swap between two steps can
at worst make the open fail. Symlinks that stay inside are followed; links that leave are
refused with `LeavesRoot`.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import platform
import secrets
from collections import deque
from typing import Any

_MAX_LINKS = 40  # as the kernel's own limit on symlinks followed in one lookup
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)

# openat2(2): x86_64 and aarch64 (and every other 64-bit Linux ABI) share number 437.
_SYS_OPENAT2 = 437
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_BENEATH = 0x08


class LeavesRoot(OSError):
    """The path, or a symlink on the way, leads outside the directory it was opened beneath."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(errno.EXDEV, why, path)


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _load_syscall() -> Any:
    if platform.system() != "Linux":
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None


_syscall = _load_syscall()
use_openat2 = _syscall is not None  # False after the kernel says it has no openat2; tests flip it


def _openat2(root_fd: int, relative: str, flags: int, mode: int) -> int | None:
    """The descriptor, or None when openat2 cannot decide (absent, denied, or an absolute
    symlink it refuses on principle: the walk decides those)."""
    global use_openat2
    assert _syscall is not None
    how = _OpenHow(flags, mode if flags & os.O_CREAT else 0, _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS)
    fd = _syscall(_SYS_OPENAT2, root_fd, os.fsencode(relative), ctypes.byref(how), ctypes.sizeof(how))
    if fd >= 0:
        return int(fd)
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EPERM, errno.E2BIG):
        use_openat2 = False  # no openat2 here (old kernel, or a seccomp filter): walk from now on
        return None
    if code in (errno.EXDEV, errno.EAGAIN, errno.EINTR):
        return None
    raise OSError(code, os.strerror(code), relative)


def open_beneath(root_fd: int, root_path: str, relative: str, flags: int, *, make_dirs: bool = False) -> int:
    """A descriptor for `relative` opened with `flags` beneath the directory `root_fd` (whose
    real path is `root_path`, for absolute symlinks that point back inside). The caller
    closes it. `make_dirs` creates missing directories on the way (`relative` names a
    directory then). Raises LeavesRoot, or the OSError of the open."""
    if os.path.isabs(relative):
        raise LeavesRoot(relative, "an absolute path is not beneath anything")
    flags |= _O_CLOEXEC
    if use_openat2:
        try:
            fd = _openat2(root_fd, relative or ".", flags, 0)
        except FileNotFoundError:
            if not make_dirs:
                raise
            fd = None  # the walk makes what is missing
        if fd is not None:
            return fd
    return _walk(root_fd, root_path, relative, flags, make_dirs)


def _parts(path: str) -> list[str]:
    return [part for part in path.split("/") if part not in ("", ".")]


def _walk(root_fd: int, root_path: str, relative: str, flags: int, make_dirs: bool) -> int:
    pending = deque(_parts(relative))
    if not pending:
        return os.open(".", flags, dir_fd=root_fd)
    stack = [root_fd]  # descriptors of the directories from the root down; the root is the caller's
    links = 0
    try:
        while pending:
            name = pending.popleft()
            if name == "..":
                if len(stack) == 1:
                    raise LeavesRoot(relative, "`..` climbs above the root")
                os.close(stack.pop())
                continue
            last = not pending
            try:
                if last and make_dirs:
                    return _open_directory(name, stack[-1], make_dirs)
                if last:
                    return os.open(name, flags | _O_NOFOLLOW, 0o666, dir_fd=stack[-1])
                stack.append(_open_directory(name, stack[-1], make_dirs))
                continue
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise
                try:
                    target = os.readlink(name, dir_fd=stack[-1])
                except OSError:
                    raise exc from None  # not a symlink after all: the open's own error stands
            links += 1
            if links > _MAX_LINKS:
                raise OSError(errno.ELOOP, "Too many levels of symbolic links", relative)
            if os.path.isabs(target):
                inside = _inside(root_path, target)
                if inside is None:
                    raise LeavesRoot(relative, f"a symlink on the way points to {target}")
                while len(stack) > 1:
                    os.close(stack.pop())
                target = inside
            pending.extendleft(reversed(_parts(target) or ["."]))
        # Only `..` and `.` were left: the directory we stand in.
        return os.open(".", flags, dir_fd=stack[-1])
    finally:
        for fd in stack[1:]:
            os.close(fd)


def _open_directory(name: str, dir_fd: int, make_dirs: bool) -> int:
    flags = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        if not make_dirs:
            raise
    # Made by someone else meanwhile: open whatever is there, by the same rules.
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o777, dir_fd=dir_fd)
    return os.open(name, flags, dir_fd=dir_fd)


def _inside(root_path: str, target: str) -> str | None:
    """`target` relative to the root when it lies under it by name, else None."""
    if target == root_path:
        return "."
    prefix = root_path.rstrip("/") + "/"
    return target[len(prefix) :] if target.startswith(prefix) else None


def replace_in(directory: int, name: str, data: bytes, mode: int | None) -> None:
    """Write `data` to a new file in `directory`, then rename it over `name` there: the one
    atomic write (the workspace's files, memory). Both the file and the rename are synced, so
    after a crash the name holds the old content or the new, never an empty or torn file."""
    temp = f".{name}.{secrets.token_hex(4)}.tmp"
    # 0o666 lets the umask decide a new file's mode, as for any editor save.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, 0o666, dir_fd=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            handle.flush()
            os.fsync(handle.fileno())
        os.rename(temp, name, src_dir_fd=directory, dst_dir_fd=directory)
        os.fsync(directory)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=directory)
        raise
