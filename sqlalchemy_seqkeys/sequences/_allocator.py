"""The one block allocator: keys a process holds in memory, per pool and tenant.

Every batched strategy (``TableSequence`` in ``batch`` and ``async_batch`` mode,
``PooledSequence``, ``BitReversedSequence(batch_size=...)``) hands keys out of a
:class:`Blocks`, one per engine pool and ``schema_translate_map`` in a
:class:`BlockStore`. Its hot path (:meth:`Blocks.take`) takes no lock where the
GIL runs; each ``take_*`` method is one way of fetching the next block.

Design: docs/architecture.md.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator
from operator import length_hint
from typing import TYPE_CHECKING, Any, Generic, NoReturn, TypeVar

import sqlalchemy as sa

from sqlalchemy_seqkeys import _fork
from sqlalchemy_seqkeys.errors import SeqKeysError, SequenceAllocationError

from .table import tenant_of

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "Block",
    "BlockStore",
    "Blocks",
    "range_block",
    "refills",
    "values_block",
]

#: One block: an iterator of its values, and the value that starts the refill
#: (the low watermark; -1: none). Replaced whole, never changed in place.
Block = tuple[Iterator[int], int]

#: True where the interpreter runs without a GIL: iterators are not
#: documented as thread-safe there, so the hot path takes the lock.
NO_GIL: bool = not getattr(sys, "_is_gil_enabled", lambda: True)()

_EMPTY: Block = (iter(()), -1)


def range_block(first: int, end: int, low_watermark: int | None = None) -> Block:
    """Values ``first .. end-1``; the refill starts at ``end - low_watermark`` (None: never)."""
    mark = -1 if low_watermark is None or low_watermark <= 0 else end - low_watermark
    return iter(range(first, end)), mark


def values_block(values: Iterable[int]) -> Block:
    """The given values, in their order (bit-reversed keys); no refill mark."""
    return iter(list(values)), -1


class Blocks:
    """What one process holds for one sequence on one database and tenant.

    ``take()`` is the lock-free hot path; the ``take_*`` methods add the slow
    path of each way of fetching. ``lock`` (a Condition) guards everything
    but the current block's values.
    """

    __slots__ = (
        "__weakref__",
        "block",
        "error",
        "failed",
        "fetch",
        "fetched",
        "fetching",
        "lock",
        "pid",
        "refill",
        "spares",
        "spawn",
        "task",
    )

    def __init__(self) -> None:
        self.block: Block = _EMPTY
        #: blocks fetched while the current one still had values: used next, in order
        self.spares: deque[Block] = deque()
        self.lock = threading.Condition(threading.Lock())
        #: a fetch is under way (a refill, or a caller fetching for the others)
        self.fetching = False
        #: a background refill's error, for the next caller that needs a block
        self.error: BaseException | None = None
        #: fetches ended so far, and the last that failed (its number, its error):
        #: callers that waited for a fetch get its error at once, instead of each
        #: fetching again behind it (a locked row: one lock timeout for all)
        self.fetched = 0
        self.failed: tuple[int, BaseException] | None = None
        self.pid = os.getpid()
        #: fetches a block in the calling thread (the one-at-a-time ways)
        self.fetch: Callable[[], Block] | None = None
        #: called once per block by the caller that takes the value at its mark, with
        #: what that caller gave :meth:`take` (its connection; None: none)
        self.refill: Callable[[Any], None] | None = None
        #: asyncio: starts a lane task that fetches a block, and that task
        #: (touched by the loop's thread only)
        self.spawn: Callable[[], None] | None = None
        self.task: asyncio.Task[None] | None = None

    # -- the hot path ---------------------------------------------------------------

    def take(self, holder: object = None) -> int | None:
        """A value of the current block, or None when it is used up. Takes no lock.

        ``holder`` (the caller's connection) goes to :attr:`refill` at the mark.
        """
        if NO_GIL:
            return self._take_locked(holder)
        values, mark = self.block
        value = next(values, None)
        if value == mark and self.refill is not None:
            self.refill(holder)
        return value

    def _take_locked(self, holder: object) -> int | None:
        with self.lock:
            values, mark = self.block
            value = next(values, None)
        if value == mark and self.refill is not None:
            self.refill(holder)
        return value

    # -- under the lock -------------------------------------------------------------

    def install(self, block: Block) -> None:
        """Take a fetched block (lock held): current if that is used up, else a spare."""
        if self.pid != os.getpid() or length_hint(block[0]) == 0:
            return  # fetched by the parent's thread (never seen in a child), or empty
        if not self.spares and length_hint(self.block[0]) == 0:
            self.block = block
        else:
            self.spares.append(block)

    def advance(self, seen: Block) -> bool:
        """Install the next spare if ``seen`` is still current (lock held); True: try again."""
        if self.block is not seen:
            return True  # another caller installed one meanwhile
        if self.spares:
            self.block = self.spares.popleft()
            return True
        return False

    def fetch_ended(self, error: BaseException | None) -> None:
        """Count a fetch that ended (lock held); keep its error for those that waited."""
        self.fetched += 1
        # not a KeyboardInterrupt of the fetching thread; a success forgets the last error
        self.failed = (self.fetched, error) if isinstance(error, Exception) else None

    def failure_since(self, fetched: int | None) -> BaseException | None:
        """The error of a fetch that failed after ``fetched`` had ended (None: not waiting)."""
        if fetched is None or self.failed is None or self.failed[0] <= fetched:
            return None
        return self.failed[1]

    def used_up(self) -> bool:
        """Whether the current block and every spare are used up (lock held)."""
        return not self.spares and length_hint(self.block[0]) == 0

    # -- the slow path: the spares, then a fetch --------------------------------------

    def take_held(self) -> int | None:
        """A value of the current block, else of the spares in turn; None: all used up.

        Where :meth:`take` found the block used up, the next spare is installed
        under the lock, and only if that block is still the current one.
        """
        while True:
            block = self.block
            value = self.take()
            if value is not None:
                return value
            with self.lock:
                if not self.advance(block):
                    return None

    # -- inline, every caller that runs out fetches --------------------------------

    def take_or_fetch(self, fetch: Callable[[], Block | None]) -> int:
        """A value; a caller that finds every block used up runs ``fetch()`` itself.

        No lock is held during the fetch, so no caller waits for another's round
        trip; two that run out at once each fetch a block, and both blocks are
        handed out. ``fetch`` returns the block (its first value goes to this
        caller) or None to be called again (nothing usable was fetched).
        """
        while True:
            value = self.take_held()
            if value is not None:
                return value
            fetched = fetch()
            if fetched is None:
                continue
            value = next(fetched[0], None)
            with self.lock:
                self.install(fetched)
            if value is not None:
                return value

    # -- inline or in a refill thread, one fetch at a time ------------------------

    def take_waiting(
        self, waits: Waits, *, background: bool, may_stay: Callable[[], bool]
    ) -> int | None:
        """A value; one ``self.fetch()`` at a time, here or (``background``) in a refill thread.

        Callers that need the block being fetched wait for it, at most
        ``waits.timeout`` s. None: the block is used up and ``may_stay()`` said
        the caller must take its value in its own transaction instead (it may
        hold a lock the fetch would wait for); asked before a refill's error is
        raised, which may have come from that very lock: the error stays for
        the next caller that needs a block.
        """
        deadline: float | None = None
        waited_since: int | None = None  # fetches ended when this call began to wait
        while True:
            value = self.take_held()
            if value is not None:
                return value
            with self.lock:
                if not self.used_up():
                    continue  # a block came meanwhile
                if may_stay():
                    return None  # never wait on (or fail with) a fetch that waits for our lock
                if (failure := self.failure_since(waited_since)) is not None:
                    waits.raise_error(self, failure)  # the fetch it waited for
                if self.error is not None:
                    waits.raise_error(self)  # a refill's, kept for the next caller
                if self.fetching:
                    if waited_since is None:
                        waited_since = self.fetched
                    deadline, remaining = waits.deadline(deadline, "another thread")
                    self.lock.wait(remaining)
                    continue
                self.fetching = True
            if background and refills.submit(self):
                continue  # wait for the refill thread
            # Fetched with the lock released: the others wait on the condition.
            return self._fetch_here()

    def _fetch_here(self) -> int:
        """Fetch in this thread (``fetching`` set by the caller); keep all but its first value."""
        assert self.fetch is not None
        try:
            block = self.fetch()
        except BaseException as exc:
            with self.lock:
                self.fetch_ended(exc)
                self.fetching = False
                self.lock.notify_all()
            raise
        value = next(block[0])
        with self.lock:
            self.install(block)
            self.fetch_ended(None)
            self.fetching = False
            self.lock.notify_all()
        return value

    def start_refill(self) -> None:
        """At the low watermark: fetch the next block in a refill thread (unless under way)."""
        with self.lock:
            if self.fetching or self.spares or self.error is not None:
                return
            self.fetching = True
        if not refills.submit(self):
            with self.lock:  # no thread to be had: the caller that runs out fetches
                self.fetching = False
                self.lock.notify_all()

    def run_refill(self) -> None:
        """The refill thread's job: fetch, then install the block or keep the error."""
        assert self.fetch is not None
        block: Block | None = None
        error: BaseException | None = None
        try:
            block = self.fetch()
        except BaseException as exc:  # handed to the caller that needs the block
            error = exc
        with self.lock:
            if self.pid == os.getpid():
                if block is not None:
                    self.install(block)
                self.error = error
                self.fetch_ended(error)
            self.fetching = False
            self.lock.notify_all()

    # -- asyncio: a task of the engine's lane fetches --------------------------------

    def take_on_lane(
        self,
        waits: Waits,
        wait: Callable[[asyncio.Task[None], float], object],
        may_stay: Callable[[], bool],
    ) -> int | None:
        """A value; the fetch is a lane task ``self.spawn()`` starts, waited for with ``wait``.

        Only the loop's thread touches this state, and a greenlet switches only
        where it waits, so each check-then-set step is atomic. A caller
        cancelled while waiting loses nothing: the task goes on, its block
        is installed for the next caller. None: as for :meth:`take_waiting`.
        """
        deadline: float | None = None
        waited_since: int | None = None
        while True:
            value = self.take_held()  # its lock: never contended, one thread only
            if value is not None:
                return value
            if may_stay():  # as in take_waiting: before a refill's error, which stays
                return None
            if (failure := self.failure_since(waited_since)) is not None:
                waits.raise_error(self, failure)
            if self.error is not None:
                waits.raise_error(self)
            # Only a task under way is waited for: a wait that blocks, never a spin.
            task = self.lane_task()
            if task is None:  # a closed lane's spawn() raises the dispose error
                assert self.spawn is not None
                self.spawn()
                task = self.lane_task()
                if task is None:  # ended at once (an eager task factory): its block or error
                    continue
            if waited_since is None:
                waited_since = self.fetched
            deadline, remaining = waits.deadline(deadline, "a task of this event loop")
            wait(task, remaining)

    def lane_task(self) -> asyncio.Task[None] | None:
        """The lane task fetching a block; None: none is under way. One cancelled before
        its first step never runs :meth:`fetch_on_lane`'s ``finally``: done, it is
        forgotten here (a wait on it would return at once, again and again)."""
        task = self.task
        if task is not None and task.done():
            self.task = task = None
        return task

    async def fetch_on_lane(self, fetch: Callable[[], Awaitable[Block]]) -> None:
        """The lane task's body: ``await fetch()`` gives a block; install it or keep the error."""
        try:
            block = await fetch()
        except Exception as exc:  # raised to the callers waiting, or the next that needs it
            self.error = exc
            self.fetch_ended(exc)
        else:
            self.install(block)
            self.fetch_ended(None)
        finally:  # also when cancelled (dispose, loop shutdown): its block is a gap
            self.task = None  # cancelled before it ran, it never gets here: lane_task()


class Waits:
    """How long a caller waits for a block another fetches, and what it is told.

    :param name: the sequence, for messages
    :param timeout: seconds a caller waits for a block being fetched
    """

    __slots__ = ("name", "timeout")

    def __init__(self, name: str, timeout: float) -> None:
        self.name = name
        self.timeout = timeout

    def deadline(self, deadline: float | None, fetcher: str) -> tuple[float, float]:
        """The deadline of a wait for a block, and the time left; raise once it passed."""
        now = time.monotonic()
        if deadline is None:
            deadline = now + self.timeout
        elif now >= deadline:
            raise SequenceAllocationError(
                f"waited {self.timeout:g} s (refill_timeout) for a block of sequence "
                f"{self.name!r} that {fetcher} is fetching; the database has not answered "
                "(is its row locked by a long transaction, or the server overloaded?). Nothing "
                "was handed out; the fetch goes on and the next call tries again. Raise "
                "refill_timeout if such waits are expected"
            )
        return deadline, deadline - now

    def raise_error(self, state: Blocks, error: BaseException | None = None) -> NoReturn:
        """Raise a failed fetch's error: ``error`` to a caller that waited for that fetch,
        else the one a refill kept for the next caller that needs a block (once)."""
        if error is None:
            error = state.error
        if state.error is error:
            state.error = None  # reported: the next call fetches again
        if isinstance(error, SeqKeysError):  # already says what to do
            raise error
        raise SequenceAllocationError(
            f"fetching a block of sequence {self.name!r} failed: "
            f"{type(error).__name__}: {error}; nothing was handed out, the next call tries again"
        ) from error


# -- the refill threads ---------------------------------------------------------------


class _Refills:
    """Long-lived daemon threads that run refills, fed by a queue.

    Starting a thread costs about a millisecond, so a refill reuses an idle
    one; a new one starts only when every thread is busy (refills of
    sequences whose rows are locked never hold up the others), and a thread
    idle for :attr:`IDLE_SECONDS` ends. A forked child starts its own.
    """

    IDLE_SECONDS = 60.0

    def __init__(self) -> None:
        self._reset()
        _fork.register(self)

    def _reset(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._jobs: deque[Callable[[], None]] = deque()
        self._idle = 0
        self._busy = 0
        self._generation = 0

    def _after_fork_in_child(self) -> None:
        self._reset()  # the parent's threads and jobs are not in this process

    def submit(self, state: Blocks) -> bool:
        """Run ``state.run_refill()`` in a refill thread; False if no thread can start."""
        job = state.run_refill
        with self._cond:
            self._jobs.append(job)
            if self._idle >= len(self._jobs):
                self._cond.notify()
                return True
            thread = threading.Thread(target=self._work, name="seqkeys-refill", daemon=True)
            try:
                # start() only waits for the thread to exist, never for this lock
                thread.start()
            except Exception:  # a thread limit, or the interpreter shutting down
                self._jobs.remove(job)
                return False
        return True

    def _work(self) -> None:
        generation = self._generation
        while True:
            with self._cond:
                if self._generation != generation:
                    return  # retired
                self._idle += 1
                while not self._jobs:
                    timed_out = not self._cond.wait(self.IDLE_SECONDS)
                    if self._generation != generation:
                        return  # retired: retire_idle() no longer counts it
                    if timed_out and not self._jobs:
                        self._idle -= 1
                        return
                self._idle -= 1
                self._busy += 1
                job = self._jobs.popleft()
            try:
                job()  # handles its own errors
            finally:
                with self._cond:
                    self._busy -= 1
                    self._cond.notify_all()

    def retire_idle(self) -> None:
        """End every idle thread (and every busy one once its job is done): the next
        refill starts a thread anew (tests of a thread that cannot start)."""
        with self._cond:
            self._generation += 1
            self._idle = 0
            self._cond.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no refill is queued or running (benchmarks, before dispose)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._jobs or self._busy:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True


refills = _Refills()


# -- the store ------------------------------------------------------------------------

S = TypeVar("S", bound="Blocks | None")

#: no (owner, options) seen yet: a dead weak reference
#: (owner, execution options, a copy of their schema_translate_map or None, state)
_NO_LAST: tuple[Callable[[], object], object, dict[Any, Any] | None, Any] = (
    lambda: None,
    None,
    None,
    None,
)


class BlockStore(Generic[S]):
    """One ``S`` per owner (an engine's pool, or an asyncio lane) and tenant.

    ``new(bind, owner)`` makes it on first use; where it gives None (an
    engine where the strategy holds no blocks), that is remembered for the
    last (owner, options) seen, never stored. Every state is forgotten in a
    forked child::

        >>> import sqlalchemy as sa
        >>> store = BlockStore(lambda bind, owner: Blocks())
        >>> engine = sa.create_engine("sqlite://")
        >>> with engine.connect() as conn:
        ...     store.of(conn) is store.of(conn)
        True
    """

    def __init__(self, new: Callable[[sa.Engine | sa.Connection, Any], S]) -> None:
        self._new = new
        self._last: tuple[Callable[[], object], object, dict[Any, Any] | None, S]
        #: how many times the states were forgotten
        self._generation = 0
        self._lock: threading.Lock
        # owner -> tenant (schema_translate_map, or None) -> state
        self._states: weakref.WeakKeyDictionary[Any, dict[object, S]]
        self.forget()
        _fork.register(self)

    def of(self, bind: sa.Engine | sa.Connection, owner: object = None) -> S:
        """This process's state for ``bind``'s pool (or ``owner``) and tenant (schema map)."""
        _fork.forked()  # libc fork(): no hook ran; the states are forgotten now
        if owner is None:
            owner = bind.pool if isinstance(bind, sa.Engine) else bind.engine.pool
        # Connections share their engine's options object until given their
        # own: the common case is one identity check, not a tenant and a lookup.
        # A schema_translate_map is a dict that may change in place (SQLAlchemy
        # itself adds "_none"; a user may switch tenants so): compared by value.
        options = bind.get_execution_options()
        last_owner, last_options, last_map, last_state = self._last
        if (
            last_owner() is owner
            and last_options is options
            and (last_map is None or last_map == options.get("schema_translate_map"))
        ):
            return last_state
        generation = self._generation
        translate = options.get("schema_translate_map")
        seen = None if translate is None else dict(translate)  # before the tenant is read
        state = self._state(bind, owner, generation)
        self._last = (weakref.ref(owner), options, seen, state)
        if self._generation != generation:
            # forgotten meanwhile (a sequence created anew): ``state`` may be a
            # former one, which this call may still use but none after it
            self._last = _NO_LAST
        return state

    def _state(self, bind: sa.Engine | sa.Connection, owner: object, generation: int) -> S:
        tenant = tenant_of(bind)
        tenants = self._states.get(owner)
        state = None if tenants is None else tenants.get(tenant)
        if state is None:
            with self._lock:
                state = self._states.get(owner, {}).get(tenant)
                if state is None:
                    state = self._new(bind, owner)
                    if state is not None and self._generation == generation:
                        self._states.setdefault(owner, {})[tenant] = state
        return state

    def forget(self) -> None:
        """Drop every state: a sequence created anew, or a forked child."""
        # counted first: a concurrent of() that cached a state read before this
        # sees the count changed and drops it again
        self._generation += 1
        self._last = _NO_LAST
        # a new lock: the old one may be held by a thread this process does not have
        self._lock = threading.Lock()
        self._states = weakref.WeakKeyDictionary()

    def _after_fork_in_child(self) -> None:
        # The states are the parent's (it hands their keys out).
        self.forget()
