"""Forking the way the fault tests need: libc's fork(), and each way of noticing a child.

``libc_fork`` is libc's ``fork()``, not ``os.fork()``: no Python at-fork hook
runs in the child, as under uWSGI without lazy-apps. ``PyDLL`` keeps the GIL
held across the call (``CDLL`` would release it), as ``os.fork()`` does: a
child forked while another thread held the GIL would otherwise never get it.

``fork_from_c`` forks from C as uWSGI's master does, with or without
``PyOS_AfterFork_Child()`` in the child. ``no_stragglers`` fails (and kills)
what a test forked or spawned and left running; ``die_with_parent`` makes a
helper process die with the test process.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shlex
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Iterator
from pathlib import Path

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
        saved = fork_module.marker_word
        fork_module.marker_word = fork_module._PidMarker()
        try:
            yield request.param
        finally:
            fork_module.marker_word = saved
    else:
        if isinstance(fork_module.marker_word, fork_module._PidMarker):
            pytest.skip("no MADV_WIPEONFORK here: the pid check is the one in use")
        yield request.param


# -- forking from C, as uWSGI's master does ------------------------------------------------

_FORK_FROM_C = r"""
#include <Python.h>
#include <signal.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* uWSGI's master forks its workers from C while it holds the GIL: a Python
   thread of the master that wants the GIL meanwhile (a lease's renewal, a
   refill) waits, and asks for it. With --py-call-osafterfork (or
   --py-call-uwsgi-fork-hooks) the worker runs PyOS_AfterFork_Child() before
   any Python; without, nothing. `busy_us`: how long the master ran C code
   before the fork. */
int seqkeys_fork_from_c(long busy_us, int after_fork_child) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < busy_us);
    /* what uWSGI's py-call-uwsgi-fork-hooks does: PyOS_AfterFork_Child() releases
       what PyOS_BeforeFork() took (Python 3.13 aborts the child without it) */
    if (after_fork_child) PyOS_BeforeFork();
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* a child never outlives the test process */
        if (after_fork_child) PyOS_AfterFork_Child();
    } else if (after_fork_child) {
        PyOS_AfterFork_Parent();
    }
    return (int)pid;
}
"""


def fork_from_c(build_dir: Path) -> Callable[[int, bool], int]:
    """``fork(busy_us, after_fork_child)``: libc ``fork()`` from C with the GIL held.

    Compiled into ``build_dir`` with the C compiler CPython was built with (a
    test without one is skipped, and fails under CI). ``after_fork_child``
    runs ``PyOS_AfterFork_Child()`` in the child first, as uWSGI does when
    asked to (and as ``os.fork()`` does).
    """
    source, library = build_dir / "fork_from_c.c", build_dir / "fork_from_c.so"
    if not library.exists():
        source.write_text(_FORK_FROM_C)
        compiler = shlex.split(sysconfig.get_config_var("CC") or "cc")
        command = [
            *compiler,
            "-shared",
            "-fPIC",
            "-O1",
            f"-I{sysconfig.get_paths()['include']}",
            str(source),
            "-o",
            str(library),
        ]
        try:
            subprocess.run(command, check=True, capture_output=True, timeout=120)
        except (OSError, subprocess.CalledProcessError) as exc:
            message = f"cannot compile the C fork helper ({' '.join(command)}): {exc}"
            if os.environ.get("CI"):
                pytest.fail(message)
            pytest.skip(message)
    function = ctypes.PyDLL(str(library)).seqkeys_fork_from_c  # PyDLL: the GIL stays held
    function.restype = ctypes.c_int
    function.argtypes = [ctypes.c_long, ctypes.c_int]
    return lambda busy_us, after_fork_child: int(function(busy_us, int(after_fork_child)))


# -- no forked process outlives its test ------------------------------------------------------


def _children() -> dict[int, bytes]:
    """This process's live children (not zombies): pid -> command line."""
    me, found = os.getpid(), {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:  # gone meanwhile
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == me and state != "Z":
            found[int(entry.name)] = cmdline
    return found


@pytest.fixture
def no_stragglers() -> Iterator[None]:
    """Fail a test after which a process it forked (or a test helper it ran) still lives.

    Such a process is killed first: a forked child hung in the interpreter
    would otherwise run forever. Servers the suite starts on first use (their
    command lines are not this interpreter's) are left alone.
    """
    if not Path("/proc/self/stat").exists():
        yield
        return
    before = set(_children())
    ours = Path("/proc/self/cmdline").read_bytes()
    yield
    deadline = time.monotonic() + 5.0
    while True:
        left = {
            pid: cmd
            for pid, cmd in _children().items()
            if pid not in before and (cmd == ours or b"tests.faults." in cmd)
        }
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    assert not left, f"{len(left)} process(es) outlived the test (killed): {sorted(left)}"


def die_with_parent() -> None:  # pragma: no cover - runs in a helper process
    """Have the kernel SIGKILL this process when its parent (the test process) dies."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
