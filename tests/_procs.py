"""Process, port and directory checks the server harnesses share (imports neither pytest nor
SQLAlchemy)."""

from __future__ import annotations

import os
import re
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path


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
