"""Process checks the server harnesses share (imports neither pytest nor SQLAlchemy)."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """Whether a process with this pid exists (one owned by another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
