"""One way to run a job in the background: every ``interval`` seconds, until it says stop.

A sync worker lease renews from a daemon thread, an async one from an
asyncio task that runs the same sync job in SQLAlchemy's greenlet (so its SQL
goes through the async driver and never blocks the loop). Both are a
:class:`Periodic`; :func:`periodic` picks one. Fork-aware: a forked child has
none of its parent's threads or loops, and a copy inherited there never runs.
See docs/strategies/snowflake.md ("Leased worker ids").
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from . import _fork

if TYPE_CHECKING:
    import asyncio

__all__ = ["GreenletLock", "Periodic", "periodic", "retrieve_error", "within"]

#: the job: runs once per interval; returns False to stop for good
Job = Callable[[], bool]


class Periodic(Protocol):
    """A job run every ``interval`` seconds in the background, once started."""

    def start(self) -> None:
        """Begin running the job (the first run is one interval from now)."""

    def stop(self) -> None:
        """Run the job no more; returns at once (a run under way finishes)."""

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for a run under way to finish (sync only)."""


class _Scheduled:
    """What both kinds hold: the job, how often it runs, and its name."""

    __slots__ = ("__weakref__", "_interval", "_job", "_name")

    def __init__(self, interval: float, job: Job, name: str) -> None:
        self._interval = interval
        self._job = job
        self._name = name


class _ThreadPeriodic(_Scheduled):
    """The job on a daemon thread."""

    __slots__ = ("_stopped", "_thread")

    def __init__(self, interval: float, job: Job, name: str) -> None:
        super().__init__(interval, job, name)
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        _fork.register(self)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        stopped = self._stopped
        while not stopped.wait(self._interval):
            if not self._job():
                return

    def stop(self) -> None:
        self._stopped.set()

    def join(self, timeout: float) -> None:
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _after_fork_in_child(self) -> None:
        # The thread does not exist here, and the Event's lock may have been
        # held by it at the fork: a new one, set.
        self._stopped = threading.Event()
        self._stopped.set()
        self._thread = None


class _TaskPeriodic(_Scheduled):
    """The job in SQLAlchemy's greenlet, from an asyncio task of ``loop``.

    ``on_cancel`` runs when the task is cancelled while not stopped: the loop
    is shutting down (``asyncio.run`` cancels every task).
    """

    __slots__ = ("_loop", "_on_cancel", "_stopped", "_task")

    def __init__(
        self,
        interval: float,
        job: Job,
        name: str,
        loop: asyncio.AbstractEventLoop,
        on_cancel: Callable[[], Coroutine[Any, Any, None]] | None,
    ) -> None:
        super().__init__(interval, job, name)
        self._loop = loop
        self._on_cancel = on_cancel
        self._stopped = False
        self._task: asyncio.Task[None] | None = None
        _fork.register(self)

    def start(self) -> None:
        self._task = self._loop.create_task(self._run(), name=self._name)

    async def _run(self) -> None:
        import asyncio

        from ._compat import greenlet_spawn

        try:
            while True:
                await asyncio.sleep(self._interval)
                if self._stopped or not await greenlet_spawn(self._job):
                    return
        except asyncio.CancelledError:
            if not self._stopped and self._on_cancel is not None:
                self._stopped = True
                await self._on_cancel()
            raise

    def stop(self) -> None:
        self._stopped = True
        task = self._task
        if task is not None and not task.done() and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(task.cancel)

    def join(self, timeout: float) -> None:
        pass  # the loop's own: see stop_async

    async def stop_async(self, timeout: float | None = None) -> asyncio.Task[None] | None:
        """Cancel the task and wait for it (unless called from it); the task if it ran on.

        A run stuck on a server that does not answer may not end when
        cancelled (the driver's clean-up waits on the same socket): past
        ``timeout`` seconds (None: no limit) it is left to end by itself, and
        returned; None once it ended (or there was none).
        """
        import asyncio

        self._stopped = True
        task = self._task
        if task is None or task is asyncio.current_task() or task.done():
            return None
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            task.add_done_callback(retrieve_error)
            return task
        retrieve_error(task)
        return None

    def _after_fork_in_child(self) -> None:
        # The parent's loop and task are not this process's.
        self._stopped = True
        self._task = None


def periodic(
    interval: float,
    job: Job,
    *,
    name: str,
    loop: asyncio.AbstractEventLoop | None = None,
    on_cancel: Callable[[], Coroutine[Any, Any, None]] | None = None,
) -> _ThreadPeriodic | _TaskPeriodic:
    """``job`` every ``interval`` seconds: on a daemon thread, or as a task of ``loop``.

    :param interval: seconds between runs; the first run is one interval after start.
    :param job: a sync callable; it returns False to stop. With ``loop`` it
        runs in SQLAlchemy's greenlet on the loop's thread, so its SQL on an
        ``AsyncEngine``'s ``sync_engine`` awaits the driver.
    :param name: the thread's or task's name.
    :param loop: the running loop for a task; None for a thread.
    :param on_cancel: with ``loop``, awaited when the task is cancelled unstopped.
    """
    if loop is None:
        return _ThreadPeriodic(interval, job, name)
    return _TaskPeriodic(interval, job, name, loop, on_cancel)


#: starts a coroutine as a task of the running loop that nobody needs to await
StartTask = Callable[[Coroutine[Any, Any, None], str], "asyncio.Task[None]"]


def within(
    seconds: float, work: Callable[[], None], name: str, start_task: StartTask | None = None
) -> bool:
    """Run ``work`` in the background; False if it has not ended after ``seconds``.

    On a daemon thread; with ``start_task`` (called inside SQLAlchemy's
    greenlet), as an asyncio task of the running loop, in the greenlet, made
    by ``start_task(coroutine, name)``. Its error is raised here. Work that
    outlasts the wait (a socket the server stopped answering, a row another
    transaction holds) runs on to its end.

    :param seconds: how long to wait for it.
    :param work: a sync callable.
    :param name: the thread's or task's name.
    :param start_task: None for a thread; else what creates (and keeps) the task.
    """
    if start_task is not None:
        import asyncio

        from ._compat import await_, greenlet_spawn

        task = start_task(greenlet_spawn(work), name)
        await_(asyncio.wait({task}, timeout=max(seconds, 0.0)))
        if not task.done():
            return False
        task.result()
        return True
    failed: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # raised in the caller's thread
            failed.append(exc)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    thread.join(max(seconds, 0.0))
    if thread.is_alive():
        return False
    if failed:
        raise failed[0]
    return True


def retrieve_error(task: asyncio.Task[Any]) -> None:
    """A done callback for a task nobody awaits: its error is read, not logged as unread."""
    if not task.cancelled():
        task.exception()


class GreenletLock:
    """A lock for sync code run in SQLAlchemy's greenlet on one event loop.

    Held across awaits of the driver, so it must be an ``asyncio.Lock``: a
    ``threading.Lock`` would stop the loop's thread when a second greenlet of
    that loop asked for it. Use it only inside the greenlet (``greenlet_spawn``).
    ``acquire(timeout=...)`` and ``release()`` are ``threading.Lock``'s.
    """

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        import asyncio

        self._lock = asyncio.Lock()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """Take the lock, waiting up to ``timeout`` seconds (-1: for as long as it takes).

        The event loop runs on while this waits. False if it was not taken.
        """
        from ._compat import await_

        if not blocking or timeout >= 0:
            return bool(await_(_acquire_within(self._lock, timeout if blocking else 0)))
        await_(self._lock.acquire())
        return True

    def release(self) -> None:
        """Give the lock back."""
        self._lock.release()

    def __enter__(self) -> None:
        self.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


async def _acquire_within(lock: asyncio.Lock, timeout: float) -> bool:
    """``lock.acquire()`` for up to ``timeout`` seconds; True if this call holds it.

    Not ``asyncio.wait_for``: before Python 3.12 it could give up on an
    acquisition that had just succeeded, and the lock stayed held for good.
    """
    import asyncio

    # A free lock is taken even with no time left: the acquisition's first
    # step runs before the timeout's.
    acquiring: asyncio.Future[bool] = asyncio.ensure_future(lock.acquire())
    try:
        await asyncio.wait({acquiring}, timeout=max(timeout, 0))
    except BaseException:  # this caller was cancelled while it waited
        _abandon(acquiring, lock)
        raise
    if acquiring.done():
        return acquiring.result()
    _abandon(acquiring, lock)
    return False


def _abandon(acquiring: asyncio.Future[bool], lock: asyncio.Lock) -> None:
    # Nobody waits for this acquisition any more: if it wins anyway, the lock goes back.
    def undo(done: asyncio.Future[bool]) -> None:
        if not done.cancelled() and done.exception() is None:
            lock.release()

    acquiring.add_done_callback(undo)
    acquiring.cancel()
