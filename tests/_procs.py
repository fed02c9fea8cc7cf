"""Process, port and directory checks the server harnesses share, their start on a free port,
log tail and with-statement (imports neither pytest nor SQLAlchemy)."""

from __future__ import annotations

import abc
import os
import re
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import TypeVar

S = TypeVar("S", bound="Harness")


def alive(pid: int) -> bool:
    """Whether a process with this pid exists (one owned by another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def free_port() -> int:
    """A loopback TCP port free when picked (another process may still bind it first)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def orphaned_dirs(prefix: str, base: Path | None = None) -> Iterator[Path]:
    """The directories ``<base>/<prefix><pid>-...`` whose process ``pid`` is gone.

    A harness names its temporary directory ``mkdtemp(prefix=f"{prefix}{os.getpid()}-")``;
    what a killed run left behind is found here.
    """
    ours = re.compile(rf"^{re.escape(prefix)}(\d+)-")
    for path in Path(base or tempfile.gettempdir()).glob(f"{prefix}*"):
        match = ours.match(path.name)
        if match and not alive(int(match.group(1))):
            yield path


def start_on_a_free_port(
    start: Callable[[int, int], subprocess.Popen[bytes]],
    wait_ready: Callable[[int], None],
    stop: Callable[[], None],
    error: type[Exception],
    *,
    tries: int = 3,
) -> None:
    """Start a server process on a free loopback port and wait until it serves.

    ``start(port, attempt)`` launches it and returns its process; ``wait_ready(port)``
    returns once it serves, or raises ``error``; ``stop()`` ends it then. Another process
    can take a free port before the server binds it: a server that died at startup is
    started again on another port (``tries`` times in all). The error of one that is alive
    but does not serve, or of the last try, is raised.
    """
    last_error: Exception | None = None
    for attempt in range(tries):
        port = free_port()
        proc = start(port, attempt)
        try:
            wait_ready(port)
            return
        except error as err:
            last_error = err
            died = proc.poll() is not None
            stop()
            if not died:
                break
    assert last_error is not None
    raise last_error


def tail(path: Path | None, lines: int) -> str:
    """The last ``lines`` lines of a server's log at ``path`` (empty if there is none)."""
    if path is None:
        return ""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class Harness(abc.ABC):
    """A server a harness starts with ``start()`` (which returns it) and stops, cleaning up,
    with ``stop()``: ``with`` does both, the stop even after a failure."""

    @abc.abstractmethod
    def start(self: S) -> S:
        """Start the server and return self."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop the server and clean up."""

    def __enter__(self: S) -> S:
        """Start and return self."""
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop and clean up."""
        self.stop()
