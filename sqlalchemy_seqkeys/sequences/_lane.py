"""Allocations of their own under asyncio: a *lane* per engine and event loop.

A column default under ``AsyncEngine`` runs in SQLAlchemy's greenlet while its flush
holds a connection of the pool, so ``separate``, ``batch`` and ``async_batch`` take
their short transactions on a :class:`Lane`: a twin of the engine's pool
(:func:`twin_engine`), one round trip per sequence row at a time, each a task the
greenlet waits for with :func:`wait`. Closed by ``await engine.dispose()`` and by
its loop's shutdown; one whose loop ended otherwise is released by the engine's next
lane or its dispose().

Design: docs/architecture.md; user guide: docs/asyncio.md.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import AsyncGenerator, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import sqlalchemy as sa

from sqlalchemy_seqkeys import _fork
from sqlalchemy_seqkeys._aio import await_, in_greenlet
from sqlalchemy_seqkeys._compat import (
    first_connect_done,
    greenlet_spawn,
    proxied_engine,
    without_overflow_limit,
)
from sqlalchemy_seqkeys._dialect import facts
from sqlalchemy_seqkeys.errors import (
    InvalidSequenceError,
    SequenceAllocationError,
    SequenceLockTimeoutError,
)

from .table import tenant_of

if TYPE_CHECKING:  # imported where used: not on `import sqlalchemy_seqkeys`
    import asyncio

__all__ = [
    "DISPOSED",
    "Lane",
    "allocate",
    "await_",
    "check_in_greenlet",
    "lane_for",
    "shares_one_connection",
    "twin_engine",
    "wait",
]

T = TypeVar("T")

_NOT_IN_GREENLET = (
    "an asyncio engine's values are taken on its event loop, inside SQLAlchemy's greenlet; "
    "from a coroutine use the awaitable form (await seq.next_value_async(async_engine)) "
    "or await conn.run_sync(seq.next_value)"
)
#: how long dispose() lets an allocation under way on SQLite finish before it
#: cancels it (a statement waits for the write lock up to the driver's busy
#: timeout, 5 s by default)
SINGLE_WRITER_GRACE = 10.0

DISPOSED = (
    "the engine was disposed while a value of sequence {name!r} was being allocated; "
    "nothing was handed out. Use the engine again (after dispose it opens a new pool) "
    "to take values"
)

_SHARED_POOLS = (sa.pool.StaticPool, sa.pool.SingletonThreadPool)


def shares_one_connection(engine: sa.Engine) -> bool:
    """True where every checkout is the same connection (in-memory SQLite): no lane there."""
    return isinstance(engine.pool, _SHARED_POOLS)


def twin_engine(engine: sa.Engine) -> sa.Engine:
    """An Engine over a twin of ``engine``'s pool: the same creator, settings, pool events
    and dialect (``Pool.recreate()``), and connections of its own, as many as sequences are
    allocated at once (no ``max_overflow``: one sequence's round trip waiting on a locked
    row must never keep another sequence's from a connection)."""
    settings = {name: getattr(engine, name) for name in ("logging_name", "echo", "hide_parameters")}
    pool = without_overflow_limit(engine.pool.recreate())
    return sa.engine.Engine(pool, engine.dialect, engine.url, **settings)


def wait(task: asyncio.Task[Any], timeout: float | None = None) -> bool:
    """Wait inside the greenlet for ``task``, at most ``timeout`` s; True if it is done.

    ``asyncio.wait`` neither cancels the task on a timeout nor when the waiting
    request is cancelled: a round trip under way always finishes.
    """
    import asyncio

    done, _ = await_(asyncio.wait({task}, timeout=timeout))
    return bool(done)


class Lane:
    """Allocations of one engine (pool) on one event loop, on a twin pool of their own."""

    def __init__(self, root: sa.Engine, loop: asyncio.AbstractEventLoop) -> None:
        # Weak, the loop and the root engine: the registry (_lanes) holds the lane, and
        # nothing it holds may keep a loop that ended (or the engine) alive.
        self._loop = weakref.ref(loop)
        self._root = weakref.ref(root)
        self.pid = os.getpid()
        self.engine = twin_engine(root)
        #: no new round trips (dispose, the loop's shutdown); a closed lane is replaced
        self.closed = False
        #: its twin pool is disposed, or being disposed: by aclose() or release()
        self.released = False
        #: round trips and refills under way; cancelled and awaited by aclose()
        self.tasks: set[asyncio.Task[Any]] = set()
        #: one round trip at a time per sequence row: a lane connection per row at
        #: most, and rows never wait on each other (a flush holding one row's lock
        #: in its own transaction may need another row's value)
        self._rows: dict[object, asyncio.Lock] = {}
        #: per row: round trips ended, and the last that ran out the server's lock
        #: timeout (its number, its error), which the round trips queued behind it
        #: get at once instead of each waiting the whole timeout again
        self._ended: dict[object, int] = {}
        self._lock_timeouts: dict[object, tuple[int, SequenceLockTimeoutError]] = {}
        self._tenants: dict[object, sa.Engine] = {}
        #: closed by the loop's shutdown_asyncgens() (asyncio.run's end): closes the lane
        self._watching = True
        self._watch = self._until_loop_shutdown()
        _advance(self._watch.asend(None))  # runs to its yield; the loop now tracks it

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The lane's event loop; None once it was garbage-collected."""
        return self._loop()

    def ended(self) -> bool:
        """Whether the lane's loop ended: closed, or collected. Its tasks will never run."""
        loop = self._loop()
        return loop is None or loop.is_closed()

    async def _until_loop_shutdown(self) -> AsyncGenerator[None, None]:
        """An async generator the loop closes in ``shutdown_asyncgens()``, after cancelling
        the tasks (``asyncio.run``, ``asyncio.Runner``): the lane closes on its own loop."""
        try:
            yield
        finally:
            self._watching = False  # running its finally: nothing may close it meanwhile
            if not self.released:
                await self.aclose()

    def engine_like(self, engine: sa.Engine) -> sa.Engine:
        """The lane's engine, with ``engine``'s schema_translate_map (its tenant)."""
        translate = engine.get_execution_options().get("schema_translate_map")
        if not translate:
            return self.engine
        tenant = tenant_of(engine)
        lane_engine = self._tenants.get(tenant)
        if lane_engine is None:
            # a copy: the caller's map may change in place (another tenant) later
            lane_engine = self._tenants[tenant] = self.engine.execution_options(
                schema_translate_map=dict(translate)
            )
        return lane_engine

    def spawn(self, coro: Coroutine[Any, Any, T], name: str) -> asyncio.Task[T]:
        """Run ``coro`` as a task of this lane; SequenceAllocationError once closed."""
        loop = self._loop()
        if self.closed or loop is None or loop.is_closed():
            coro.close()  # never left unawaited
            raise SequenceAllocationError(DISPOSED.format(name=name))
        task = loop.create_task(coro, name=f"seqkeys-{name}")
        self.tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled():
            # Retrieved here: a waiter that was cancelled meanwhile never reads it,
            # and asyncio would log it as never retrieved.
            task.exception()

    async def run(self, row: object, fn: Callable[..., T], *args: Any) -> T:
        """Run sync ``fn(*args)`` in a greenlet of this task, one per ``row`` at a time.

        A round trip that waited out the server's lock timeout fails the ones
        queued behind it with its error: the row is locked, and one after the
        other each would wait the whole timeout again.
        """
        lock = self._rows.get(row)
        if lock is None:
            import asyncio

            lock = self._rows[row] = asyncio.Lock()
        ended = self._ended.get(row, 0)
        async with lock:
            failure = self._lock_timeouts.get(row)
            if failure is not None and failure[0] > ended:
                raise failure[1]
            try:
                result = await greenlet_spawn(fn, *args)
            except SequenceLockTimeoutError as exc:
                self._lock_timeouts[row] = (self._ended.get(row, 0) + 1, exc)
                raise
            else:
                self._lock_timeouts.pop(row, None)  # the row is free again
                return result
            finally:
                self._ended[row] = self._ended.get(row, 0) + 1

    def outcome(self, task: asyncio.Task[T], name: str) -> T:
        """``task``'s result; a task cancelled by dispose() is an allocation error."""
        if task.cancelled():
            raise SequenceAllocationError(DISPOSED.format(name=name))
        return task.result()

    async def aclose(self) -> None:
        """Cancel what is under way, wait for it, close the twin pool's connections.

        On a single-writer engine (SQLite) the round trips under way finish first
        (for up to :data:`SINGLE_WRITER_GRACE` s): an aiosqlite statement cancelled
        midway leaves its connection, with SQLite's write lock, open in the
        driver's thread, and every later writer of the database waits on it.
        """
        import asyncio

        self.closed = self.released = True
        self._forget()
        tasks = list(self.tasks)
        if tasks and facts(self.engine.dialect).single_writer_lock:
            await asyncio.wait(tasks, timeout=SINGLE_WRITER_GRACE)
        for task in tasks:
            task.cancel()  # nothing for a task that has finished
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        await greenlet_spawn(self.engine.dispose)
        self._finish_watch()

    def release(self) -> None:
        """Release a lane whose loop ended (:meth:`ended`), never touching that loop.

        Its tasks will never run again: their blocks and values are a gap. The twin
        pool's connections are closed on the running loop, in its greenlet (``await
        engine.dispose()``, a new lane of the engine on another loop), or on a loop of
        this call's own where none runs (a sync ``dispose()``): psycopg and aiosqlite
        close there; asyncpg's belong to the closed loop, and SQLAlchemy logs their
        failed close. Under a running loop but outside its greenlet (a sync dispose()
        from a coroutine) they are dereferenced, as ``dispose(close=False)`` does.
        """
        if self.released:
            return
        self.closed = self.released = True
        self._forget()
        self.tasks.clear()
        self._finish_watch()
        if in_greenlet():
            self.engine.dispose()
            return
        import asyncio

        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop runs in this thread: close them on one of our own
            closer = asyncio.new_event_loop()
            try:
                closer.run_until_complete(greenlet_spawn(self.engine.dispose))
            finally:
                closer.close()
        else:
            self.engine.dispose(close=False)

    def _finish_watch(self) -> None:
        """Close the watch of a released lane here (its finally awaits nothing then), not
        when it is collected: its loop would be asked to close it, maybe once closed."""
        if self._watching:
            self._watching = False
            _advance(self._watch.aclose())

    def _forget(self) -> None:
        """Out of the registry: the next allocation on this loop (if any) opens a new lane."""
        root = self._root()
        with _lanes_lock:
            per_loop = None if root is None else _lanes.get(root)
            if per_loop is not None:
                for key, lane in list(per_loop.items()):
                    if lane is self:
                        del per_loop[key]


def _advance(step: Any) -> None:
    """Run one step of an async generator that awaits nothing (asend, aclose), here."""
    try:
        step.send(None)
    except (StopIteration, StopAsyncIteration):
        pass
    except RuntimeError:  # closed meanwhile by its loop's thread ("already running")
        pass


# root Engine -> id(loop) -> Lane. Keyed by the Engine, not its pool: Engine.dispose()
# replaces the pool before the engine_disposed event, which must still find them. A
# lane stays here until closed or released, never dropped unclosed with its loop (a
# collected loop's aiosqlite threads and server connections would stay open); the
# lane holds its loop weakly (Lane.loop: another loop may get a collected one's id).
_lanes: weakref.WeakKeyDictionary[sa.Engine, dict[int, Lane]] = weakref.WeakKeyDictionary()
_lanes_lock = threading.Lock()  # loops may run in several threads; held for lookups only


class _ForgetLanes:
    """In a forked child: the lanes, their connections and their tasks are the parent's."""

    def __init__(self) -> None:
        self.parents: list[Lane] = []

    def _after_fork_in_child(self) -> None:
        global _lanes_lock
        # Forget them without closing anything, as dispose(close=False); the
        # lock may have been held by a thread this process does not have.
        _lanes_lock = threading.Lock()
        lanes = [lane for per_loop in _lanes.values() for lane in per_loop.values()]
        _lanes.clear()
        for lane in lanes:  # their watches end here, not through the parent's loop
            lane.closed = lane.released = True
            lane._finish_watch()
        # Kept, never collected: collecting the parent's connections here would have
        # their drivers warn, or close what the parent still uses.
        self.parents.extend(lanes)


_forget_lanes = _ForgetLanes()
_fork.register(_forget_lanes)
#: aclose() tasks started by a dispose outside the greenlet (asyncio keeps weak references)
_closing: set[asyncio.Task[None]] = set()


def _root(engine: sa.Engine) -> sa.Engine:
    # engine.execution_options(...) is an OptionEngine over the same pool and events
    return proxied_engine(engine)


def check_in_greenlet() -> None:
    """Refuse, naming the awaitable form, sync calls on an asyncio engine from a coroutine."""
    if not in_greenlet():
        raise InvalidSequenceError(_NOT_IN_GREENLET)


def lane_for(engine: sa.Engine) -> Lane:
    """The lane of ``engine`` (an async engine's sync side) on the running loop."""
    check_in_greenlet()
    import asyncio

    loop = asyncio.get_running_loop()  # in the greenlet: the loop's own thread
    root = _root(engine)
    _fork.forked()  # a libc-forked child forgets the parent's lanes (_ForgetLanes)
    with _lanes_lock:
        lane = _lanes.get(root, {}).get(id(loop))
    if lane is None or lane.closed or lane.loop is not loop:
        _initialize_dialect(root)
    with _lanes_lock:
        per_loop = _lanes.get(root)
        if per_loop is None:
            per_loop = _lanes[root] = {}
            if not sa.event.contains(root, "engine_disposed", _on_engine_disposed):
                sa.event.listen(root, "engine_disposed", _on_engine_disposed)
        lane = per_loop.get(id(loop))
        if lane is not None and not lane.closed and lane.loop is loop:
            return lane
        # A new lane: those of loops that ended are released (here, on this loop)
        ended = [other for other in per_loop.values() if other.ended()]
        for other in ended:
            other.closed = True
        lane = per_loop[id(loop)] = Lane(root, loop)
    for other in ended:
        other.release()
    return lane


def _initialize_dialect(root: sa.Engine) -> None:
    """Have ``root``'s pool run its first connect before its twin pool is made (outside
    the lanes' lock).

    The twin shares the root's dialect, which learns the server (its version; on
    MariaDB, that it has sequences) in the first connect. Run in a twin while the
    root's pool also connected, the twin could hand out a connection before the
    dialect was initialized (a MariaDB dialect then reads as one without sequences);
    run in the root, under its pool's own lock, every twin of every loop finds the
    dialect ready and needs no lock but its own. The connection is closed, not pooled:
    it belongs to this loop, and the root's pool may serve other loops.
    """
    if first_connect_done(root.pool) or shares_one_connection(root):
        return
    try:
        with root.connect() as conn:
            conn.invalidate()
    except sa.exc.DBAPIError as exc:
        raise SequenceAllocationError(
            f"cannot connect to the database to allocate keys: {exc.orig!r}"
        ) from exc


def allocate(engine: sa.Engine, row: object, name: str, fn: Callable[..., T], *args: Any) -> T:
    """``fn(lane_engine, *args)`` in the lane's task; waited for here, inside the greenlet."""
    lane = lane_for(engine)
    task = lane.spawn(lane.run(row, fn, lane.engine_like(engine), *args), name)
    wait(task)
    return lane.outcome(task, name)


def _on_engine_disposed(engine: sa.Engine) -> None:
    """Close the engine's lanes: awaited inside ``await async_engine.dispose()``."""
    with _lanes_lock:
        per_loop = _lanes.pop(_root(engine), None)
    if not per_loop:
        return
    import asyncio

    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:  # a sync dispose() outside any loop
        running = None
    for lane in list(per_loop.values()):
        if lane.pid != os.getpid():
            continue  # the parent's (dispose(close=False) in a forked child)
        loop = lane.loop
        if loop is None or loop.is_closed():  # a loop that ended: nothing runs there again
            lane.release()
        elif loop is running and in_greenlet():
            await_(lane.aclose())
        elif loop is running:  # dispose() of the sync engine, from a coroutine
            _close_on(lane)
        else:  # another live loop's lane (another thread's): closed there, by a task of it
            lane.closed = True
            for pending in list(lane.tasks):
                loop.call_soon_threadsafe(pending.cancel)
            try:
                loop.call_soon_threadsafe(_close_on, lane)
            except RuntimeError:  # closed meanwhile
                lane.release()


def _close_on(lane: Lane) -> None:
    """Start ``lane.aclose()`` as a task of its loop (on that loop's thread)."""
    loop = lane.loop
    if lane.released or loop is None or loop.is_closed():
        return  # closed meanwhile, by its loop's shutdown
    task = loop.create_task(lane.aclose())
    _closing.add(task)
    task.add_done_callback(_closing.discard)
