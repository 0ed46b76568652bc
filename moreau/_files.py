"""Files written safely: whole or not at all, with the mode the umask asks for, and a directory lock.

:func:`atomic_write` writes into a temporary file in the target's directory, flushes it to the
disk and renames it over the target, so a reader (or a crash, or a full disk) never sees a
partial file; the file gets mode ``0o666 & ~umask``, as ``open()`` would give it.
:func:`lock_directory` makes one process at a time the writer of a directory (``flock`` on a
lock file in it, never waiting).  Used by ``moreau reproduce`` and ``moreau check --json``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from pathlib import Path

__all__ = ["LOCK_NAME", "DirectoryLocked", "atomic_write", "file_mode", "lock_directory"]

LOCK_NAME = ".lock"


class DirectoryLocked(RuntimeError):
    """Another process holds the lock of the directory (``path``: the lock file; ``holder``: its pid text)."""

    def __init__(self, path, holder: str):
        super().__init__(f"another process{f' (pid {holder})' if holder else ''} holds the lock {path}")
        self.path, self.holder = Path(path), holder


def _read_umask() -> int | None:
    """The process umask from ``/proc/self/status`` (Linux >= 4.7), or ``None`` where it is not shown."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _umask_at_import() -> int:
    # os.umask cannot be read without being set: set and restore it once, here, at import time
    # (before this module writes anything), and only where /proc does not show it
    found = _read_umask()
    if found is not None:
        return found
    old = os.umask(0o022)
    os.umask(old)
    return old


_UMASK_AT_IMPORT = _umask_at_import()


def file_mode() -> int:
    """The mode ``open()`` gives a new file now: ``0o666 & ~umask`` (read without changing the umask)."""
    umask = _read_umask()
    return 0o666 & ~(_UMASK_AT_IMPORT if umask is None else umask)


def atomic_write(path, data) -> None:
    """Write ``data`` (``str``, as UTF-8, or ``bytes``) to ``path`` whole, or leave ``path`` as it was.

    The temporary file lives in ``path``'s directory (so the rename is atomic), is flushed to the
    disk (``fsync``) before ``os.replace``, and has mode ``0o666 & ~umask``.  On any failure the
    temporary file is removed and an ``OSError`` names ``path`` (not the temporary file).
    """
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with open(fd, "wb") as fh:
            if hasattr(os, "fchmod"):  # mkstemp makes 0o600; give the file what open() would
                os.fchmod(fh.fileno(), file_mode())
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        tmp = None
        _sync_directory(path.parent)
    except OSError as exc:
        if exc.errno is None:
            raise
        raise OSError(exc.errno, exc.strerror or os.strerror(exc.errno), str(path)) from exc
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _sync_directory(directory: Path) -> None:
    """Make the rename itself durable where the platform allows it (best effort)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def lock_directory(directory, name: str = LOCK_NAME):
    """Hold an exclusive, non-blocking lock on ``directory`` while the ``with`` block runs.

    Yields ``True`` when locked, ``False`` where the platform or file system has no ``flock``
    (Windows; some network file systems): the caller decides whether to go on unlocked.
    Raises :class:`DirectoryLocked` at once when another process holds the lock.  The lock file
    (``directory/.lock``, holding the holder's pid) stays; the lock ends with the process.
    """
    path = Path(directory) / name
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        locked = _flock(fd, path)
        if locked:
            with contextlib.suppress(OSError):  # the holder's pid: for the message of the next comer
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        yield locked
    finally:
        os.close(fd)


def _flock(fd: int, path: Path) -> bool:
    try:
        import fcntl
    except ImportError:  # no flock on this platform
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise DirectoryLocked(path, os.read(fd, 32).decode("ascii", "replace").strip()) from None
        if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            return False  # a file system without locks
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    return True
