"""Forking the way the fault tests need: libc's fork(), and each way of noticing a child.

``libc_fork`` is libc's ``fork()``, not ``os.fork()``: no Python at-fork hook
runs in the child, as under uWSGI without lazy-apps. ``PyDLL`` keeps the GIL
held across the call (``CDLL`` would release it), as ``os.fork()`` does: a
child forked while another thread held the GIL would otherwise never get it.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Iterator

import pytest

from sqlalchemy_seqkeys import _fork as fork_module

libc_fork = ctypes.PyDLL(None).fork
libc_fork.restype = ctypes.c_int
libc_fork.argtypes = []


def libc_fork_when_quiet(settle: float = 0.05) -> int:
    """libc's ``fork()`` once the process's other threads have settled.

    A thread waiting for the GIL at the instant of a raw fork leaves, in the
    child, a waiter on the GIL's condition variable that no thread there will
    ever be: CPython re-creates the GIL in ``PyOS_AfterFork_Child``, which a
    raw fork skips, so the child's first hand-over of the GIL to a new thread
    hangs (seen with aiosqlite's worker thread, caught returning from a query).
    Sleeping first lets such a thread take the GIL and block on its queue again.
    """
    time.sleep(settle)
    return int(libc_fork())


@pytest.fixture(params=["wipe-on-fork page", "pid"])
def fork_marker(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each way of noticing a child: the Linux page, and the os.getpid() fallback."""
    if request.param == "pid":
        saved = fork_module._marker
        fork_module._marker = fork_module._PidMarker()
        try:
            yield request.param
        finally:
            fork_module._marker = saved
    else:
        if isinstance(fork_module._marker, fork_module._PidMarker):
            pytest.skip("no MADV_WIPEONFORK here: the pid check is the one in use")
        yield request.param
