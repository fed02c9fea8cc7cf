"""Snowflake ids: 63-bit integers minted without a database round trip.

A snowflake id packs, from the top: a zero sign bit, the time since an epoch
in ticks (milliseconds by default), a worker id that no other live process
shares, and a per-tick sequence::

    >>> from sqlalchemy_seqkeys import Snowflake
    >>> ids = Snowflake(worker_id=7)
    >>> a, b = ids(), ids()
    >>> a < b
    True
    >>> ids.decode(a).worker_id
    7

The default :class:`SnowflakeLayout` is the classic one: 41 bits of
milliseconds since 2010-11-04T01:42:54.657Z (Twitter's epoch, which the
reference code uses), 10 bits of worker (usable as 5 bits of datacenter and 5
of machine) and 12 bits of sequence, so one worker mints at most 4,096,000 ids
per second, until 2080-07-10.

Guarantees
----------
Two ids are equal only if they carry the same tick, worker id and sequence.
One generator never repeats a (tick, sequence) pair, from any number of
threads; the rest depends on the worker id being used by one process at a
time, and on that process's clock. The generator refuses every way it knows
that could break:

- **The clock steps back** (NTP, a VM migration): a step of at most
  ``max_backwards_ms`` is waited out; a larger one raises
  :class:`~sqlalchemy_seqkeys.ClockMovedBackwardsError` with its size, as the
  reference code does, instead of minting ids a second time.
- **A process forks**, by ``os.fork()``, ``multiprocessing`` or a bare libc
  ``fork()`` that runs no Python hook (uWSGI without lazy-apps, C
  extensions): the child would mint its parent's ids. Every call checks,
  before it touches the generator's state, a word the kernel zeroes in every
  child (a ``MADV_WIPEONFORK`` page on Linux; elsewhere ``os.getpid()``), so
  not even one id of the child can repeat one of the parent's. With a fixed
  worker id the child then raises :class:`~sqlalchemy_seqkeys.ForkedWorkerError`
  unless ``after_fork`` gives it a worker id of its own; with a
  :class:`~sqlalchemy_seqkeys.WorkerLease` the child leases its own id, once
  per process however many threads or generators ask at once, and leases
  another after that one is lost (the call that finds it lost raises).
- **A worker id passes to another process** (a lease handed over after a
  clean close, a crash, or a pause longer than the lease's ttl): each lease
  records in the database the highest timestamp its holder may mint (a
  high-water mark, extended as the lease is renewed, lowered at a clean close
  to what was actually minted). The holder never mints past it, and the next
  holder of the worker id mints nothing until its own clock has passed it, so
  clocks that disagree cannot make two holders mint the same tick. A holder
  whose lease may have lapsed (a pause, a host suspend: measured on a clock
  that counts both) raises :class:`~sqlalchemy_seqkeys.WorkerLeaseLostError`
  instead of minting; it checks after reading the clock, so a pause between
  the two changes nothing. See :mod:`sqlalchemy_seqkeys.workers`.
- **A layout that silently runs out**: a layout with less than ten years of
  timestamp left is refused unless ``allow_short_life=True``.

Not covered: two processes given the same fixed worker id by hand, a
generator that is not bound to its lease (``Snowflake(worker_id=lease.worker_id)``
instead of ``Snowflake(worker_id=lease)``), a lease table emptied while its
ids are in use, and a clock that jumps *forward* (ids then carry a later
timestamp; they stay unique).

Every :class:`Snowflake` bound to one lease shares one sequence, so they mint
distinct ids; they must agree on the layout, the clock and the
clock-backwards policy.

A generator can be declared before its worker id exists, with the models
(``ids = Snowflake()``), and bound when the application starts with
:meth:`Snowflake.bind` (a FastAPI lifespan with an
:class:`~sqlalchemy_seqkeys.workers.AsyncWorkerLease`, a Flask app factory or
a Celery ``worker_process_init`` handler with a
:class:`~sqlalchemy_seqkeys.WorkerLease`). Until then it raises
:class:`~sqlalchemy_seqkeys.NoWorkerIdError`; binding again, to a new lease
after the old one was lost, is safe while other threads and tasks mint.

On a range-partitioned engine (TiDB, Spanner) consecutive snowflake ids share
their leading digits and land on one region. :func:`rotate_digits` moves the
last decimal digit(s) to just after the first, which spreads consecutive ids
over 10 (100, 1000) regions; ``Snowflake(..., transform=rotate_digits)``
applies it to every id and :meth:`Snowflake.decode` undoes it.
"""

from __future__ import annotations

import functools
import itertools
import operator
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, NamedTuple

from . import _fork
from ._validate import check_aware, check_flag, check_int, check_seconds, checked_clock
from .errors import (
    ClockMovedBackwardsError,
    ClockSkewError,
    ForkedWorkerError,
    InvalidSnowflakeError,
    NoWorkerIdError,
    TimestampOutOfRangeError,
    WorkerLeaseLostError,
)

if TYPE_CHECKING:
    from .workers import AsyncWorkerLease, WorkerLease, _Lease

__all__ = [
    "DEFAULT_EPOCH",
    "DecodedSnowflake",
    "Snowflake",
    "SnowflakeLayout",
    "rotate_digits",
    "unrotate_digits",
]

UTC = timezone.utc
#: Twitter's snowflake epoch, 1288834974657 ms after the Unix epoch.
DEFAULT_EPOCH = datetime(2010, 11, 4, 1, 42, 54, 657000, tzinfo=UTC)
_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_INT64 = 2**63 - 1


@dataclass(frozen=True)
class SnowflakeLayout:
    """How the 63 value bits of a snowflake id are split; validated on construction.

    ``epoch`` must be timezone-aware; ``time_unit`` is the length of one tick.
    A layout whose timestamp field runs out less than ten years from now is
    refused unless ``allow_short_life=True``.

    Example::

        >>> layout = SnowflakeLayout()
        >>> layout.exhausted_at.year
        2080
        >>> SnowflakeLayout(timestamp_bits=39, worker_bits=8, sequence_bits=16,
        ...                 time_unit=timedelta(milliseconds=10)).exhausted_at.year
        2185
    """

    timestamp_bits: int = 41
    worker_bits: int = 10
    sequence_bits: int = 12
    epoch: datetime = DEFAULT_EPOCH
    time_unit: timedelta = timedelta(milliseconds=1)
    allow_short_life: bool = False

    def __post_init__(self) -> None:
        for field in ("timestamp_bits", "worker_bits", "sequence_bits"):
            check_int(getattr(self, field), field, InvalidSnowflakeError, min=0)
        if self.timestamp_bits < 1:
            raise InvalidSnowflakeError("timestamp_bits must be at least 1")
        total = self.timestamp_bits + self.worker_bits + self.sequence_bits
        if total > 63:
            raise InvalidSnowflakeError(
                f"the layout needs {total} bits, but a snowflake id has 63 (the sign bit stays "
                "0 so that ids are positive BIGINTs); take bits from one of the fields"
            )
        check_aware(self.epoch, "epoch", InvalidSnowflakeError)
        check_flag(self.allow_short_life, "allow_short_life", InvalidSnowflakeError)
        if not isinstance(self.time_unit, timedelta) or self.time_unit <= timedelta(0):
            raise InvalidSnowflakeError(
                f"time_unit must be a positive timedelta, not {self.time_unit!r}"
            )
        if self.time_unit % timedelta(microseconds=1):
            raise InvalidSnowflakeError("time_unit must be a whole number of microseconds")
        try:
            self.exhausted_at  # noqa: B018 - a datetime must hold it
        except OverflowError:
            raise InvalidSnowflakeError(
                f"this layout's timestamp field ({self.timestamp_bits} bits of "
                f"{self.time_unit}) runs past the year 9999, which a datetime cannot hold; "
                "use fewer timestamp bits (give them to the worker or sequence fields)"
            ) from None
        if not self.allow_short_life:
            left = self.exhausted_at - datetime.now(UTC)
            if left < timedelta(days=3652):
                raise InvalidSnowflakeError(
                    f"this layout's timestamp field runs out at {self.exhausted_at.isoformat()}, "
                    f"{left.days} days from now; add timestamp bits, use a later epoch or a "
                    "longer time_unit, or pass allow_short_life=True"
                )

    @property
    def exhausted_at(self) -> datetime:
        """The first instant the timestamp field cannot hold."""
        return self.epoch + self.time_unit * (1 << self.timestamp_bits)

    @property
    def max_worker_id(self) -> int:
        """The largest worker id the layout holds."""
        return (1 << self.worker_bits) - 1

    @property
    def timestamp_shift(self) -> int:
        """Where the timestamp field starts: an id holds ``ticks << timestamp_shift``."""
        return self.worker_bits + self.sequence_bits

    @property
    def worker_shift(self) -> int:
        """Where the worker field starts: an id holds ``worker_id << worker_shift``."""
        return self.sequence_bits

    @property
    def sequence_shift(self) -> int:
        """Where the sequence field starts: an id holds ``sequence << sequence_shift``."""
        return 0

    def decompose(self, value: int) -> tuple[int, int, int]:
        """Split an id (no transform) into ``(ticks, worker_id, sequence)``.

        :param value: an id of this layout.

        Example::

            >>> SnowflakeLayout().decompose(4198401)
            (1, 1, 1)
        """
        check_int(value, "value", InvalidSnowflakeError, min=0, max=MAX_INT64)
        return (
            value >> self.timestamp_shift,
            (value >> self.worker_shift) & self.max_worker_id,
            (value >> self.sequence_shift) & ((1 << self.sequence_bits) - 1),
        )

    def worker_from(self, datacenter: int, machine: int, *, datacenter_bits: int = 5) -> int:
        """Compose a worker id from a datacenter id and a machine id (5 + 5 bits by default).

        Example::

            >>> SnowflakeLayout().worker_from(datacenter=3, machine=17)
            113
        """
        check_int(
            datacenter_bits, "datacenter_bits", InvalidSnowflakeError, min=0, max=self.worker_bits
        )
        machine_bits = self.worker_bits - datacenter_bits
        check_int(
            datacenter, "datacenter", InvalidSnowflakeError, min=0, max=(1 << datacenter_bits) - 1
        )
        check_int(machine, "machine", InvalidSnowflakeError, min=0, max=(1 << machine_bits) - 1)
        return (datacenter << machine_bits) | machine

    def compose(self, ticks: int, worker_id: int, sequence: int) -> int:
        """Pack the three fields into an id (no transform).

        Example::

            >>> SnowflakeLayout().compose(1, 1, 1)
            4198401
        """
        check_int(ticks, "ticks", InvalidSnowflakeError, min=0, max=(1 << self.timestamp_bits) - 1)
        check_int(worker_id, "worker_id", InvalidSnowflakeError, min=0, max=self.max_worker_id)
        check_int(
            sequence, "sequence", InvalidSnowflakeError, min=0, max=(1 << self.sequence_bits) - 1
        )
        return (
            (ticks << (self.worker_bits + self.sequence_bits))
            | (worker_id << self.sequence_bits)
            | sequence
        )

    def ticks_at(self, instant: datetime) -> int:
        """Ticks since the epoch at ``instant`` (aware), rounded down.

        An instant before the epoch or past :attr:`exhausted_at` has no tick:
        it raises :class:`~sqlalchemy_seqkeys.TimestampOutOfRangeError`.
        """
        check_aware(instant, "instant", InvalidSnowflakeError)
        if not self.epoch <= instant < self.exhausted_at:
            raise TimestampOutOfRangeError(
                f"{instant.isoformat()} is outside this layout's time range, from its epoch "
                f"{self.epoch.isoformat()} to {self.exhausted_at.isoformat()}; no snowflake "
                "id of this layout has it"
            )
        return (instant - self.epoch) // self.time_unit

    def instant_of(self, ticks: int) -> datetime:
        """The UTC instant at which tick ``ticks`` begins."""
        check_int(ticks, "ticks", InvalidSnowflakeError, min=0, max=(1 << self.timestamp_bits) - 1)
        return self.epoch.astimezone(UTC) + self.time_unit * ticks


class DecodedSnowflake(NamedTuple):
    """The fields of a snowflake id: :meth:`Snowflake.decode` returns one.

    Example::

        >>> s = Snowflake(worker_id=3)
        >>> decoded = s.decode(s())
        >>> decoded.worker_id, decoded.sequence
        (3, 0)
    """

    timestamp: datetime
    worker_id: int
    sequence: int


# -- digit rotation ------------------------------------------------------------


def _check_digits(value: object, digits: object) -> str:
    hint = "digit rotation takes a non-negative int"
    text = str(check_int(value, "value", InvalidSnowflakeError, min=0, hint=hint))
    digits = check_int(digits, "digits", InvalidSnowflakeError, min=1)
    if len(text) <= digits:
        raise InvalidSnowflakeError(
            f"{value} has {len(text)} digit(s); rotating {digits} needs at least {digits + 1}"
        )
    return text


def _checked(result: str, value: int) -> int:
    rotated = int(result)
    if rotated > MAX_INT64:
        raise InvalidSnowflakeError(
            f"rotating {value} gives {rotated}, past 2**63 - 1; it would not fit a BIGINT "
            "(ids whose last digits are large need a layout with fewer timestamp bits)"
        )
    return rotated


def rotate_digits(value: int, digits: int = 1) -> int:
    """Move the last ``digits`` decimal digits to just after the first digit.

    Consecutive snowflake ids then differ in their second digit(s), which
    spreads them over ``10 ** digits`` key ranges of a range-partitioned engine.

    Example (values from the TiDB snowflake-id article)::

        >>> rotate_digits(561632371724517376)
        566163237172451737
        >>> rotate_digits(561632371728711680)
        506163237172871168
    """
    text = _check_digits(value, digits)
    return _checked(text[0] + text[-digits:] + text[1:-digits], value)


def unrotate_digits(value: int, digits: int = 1) -> int:
    """Undo :func:`rotate_digits`.

    Example::

        >>> unrotate_digits(566163237172451737)
        561632371724517376
    """
    text = _check_digits(value, digits)
    return _checked(text[0] + text[1 + digits :] + text[1 : 1 + digits], value)


def _inverse_of(transform: Callable[[int], int]) -> Callable[[int], int] | None:
    from .bitreverse import reverse_bits

    inverses: dict[object, Callable[[int], int]] = {
        rotate_digits: unrotate_digits,
        unrotate_digits: rotate_digits,
        reverse_bits: reverse_bits,  # its own inverse
    }
    if isinstance(transform, functools.partial) and transform.func in inverses:
        return functools.partial(inverses[transform.func], *transform.args, **transform.keywords)
    return inverses.get(transform)


_bind_locks: dict[int, threading.Lock] = {}


#: (start ns, end ns, counter, cap, tick) of the tick being minted
_TickState = tuple[int, int, "itertools.count[int]", int, int]

#: Where the GIL runs one C call at a time, next() on an itertools.count is
#: atomic and the hot path needs no lock; free-threaded builds take the lock.
_LOCK_FREE = getattr(sys, "_is_gil_enabled", lambda: True)()


# -- the generator ---------------------------------------------------------------


class _Wait(Exception):  # noqa: N818 - a signal inside the slow path, never seen outside
    """Raised under a core's lock by a call that must wait; the wait happens outside it.

    Inside SQLAlchemy's greenlet a wait hands the event loop back, and another
    task of that loop may then mint on the same thread: it must not find the
    lock held.
    """

    def __init__(
        self,
        seconds: float = 0.0,
        *,
        extend_to_ms: int = -1,
        floor: bool = False,
        rebind: bool = False,
    ):
        self.seconds = seconds
        self.extend_to_ms = extend_to_ms
        self.floor = floor
        self.rebind = rebind  # the generator takes a new lease (see _Core.relinquished)


def _pause(seconds: float) -> None:
    # Only on waiting paths: SQLAlchemy's greenlet bridge, imported when first needed.
    from ._aio import pause

    pause(seconds)


class _Core:
    """The minting state of one worker id in one process.

    Shared by every :class:`Snowflake` bound to the same lease (they share the
    worker id, so they must share its sequence). Its state lives in closure
    cells, the cheapest state Python has: this runs once per row.
    """

    def __init__(
        self,
        layout: SnowflakeLayout,
        worker_id: int,
        clock: Callable[[], int],
        *,
        waits: bool,
        max_backwards_ms: float,
        lease: _Lease[Any] | None,
        after_tick: int = -1,
    ) -> None:
        self.layout = layout
        self.worker_id = worker_id
        self.clock = clock
        self.waits = waits
        self.max_backwards_ms = max_backwards_ms
        self.lease = lease
        self.token = _fork.process_token()
        self._build(after_tick)

    minter: Callable[[Callable[[], int]], Callable[[], int]]
    stop: Callable[[Callable[[], int] | None], int]
    last_ms_of: Callable[[int], int]
    #: True once the implicit lease of a forked child was found lost: the
    #: generator's next call claims a new one (never mints here again)
    relinquished: Callable[[], bool]

    def _build(self, after_tick: int) -> None:
        layout = self.layout
        unit_ns = layout.time_unit // timedelta(microseconds=1) * 1000
        epoch_ns = (layout.epoch - _UNIX_EPOCH) // timedelta(microseconds=1) * 1000
        shift = layout.worker_bits + layout.sequence_bits
        worker_part = self.worker_id << layout.sequence_bits
        seq_max = (1 << layout.sequence_bits) - 1
        tick_limit = 1 << layout.timestamp_bits
        clock = self.clock
        lock = threading.Lock()
        waits = self.waits
        max_back_ticks = int(self.max_backwards_ms * 1_000_000 // unit_ns)
        lease = self.lease
        # This process's token in one load; 0 in a forked child until it resets
        # (read at build: a core built before a test swapped the marker keeps
        # the one it was stamped under).
        stamp = _fork._marker
        token = self.token
        sleep = time.sleep
        monotonic = time.monotonic

        def last_ms_of(tick: int) -> int:
            # The Unix millisecond holding the last nanosecond of ``tick``.
            return (epoch_ns + (tick + 1) * unit_ns - 1) // 1_000_000

        # The previous holder's ids reach tick ``floor``; ours start above it.
        floor = -1
        if lease is not None:
            floor = ((lease._floor_ms + 1) * 1_000_000 - 1 - epoch_ns) // unit_ns

        # The current tick's state, replaced as a whole (under the lock) when a
        # tick begins: clock readings in [start, end) fall in the tick, whose
        # ids ``counter`` hands out up to ``cap``. One tuple, so that a thread
        # reads a consistent state with one load.
        stopped: _TickState = (0, 0, itertools.count(), -1, -1)
        state: _TickState = stopped
        # The current tick (the state's last field); -1: none yet. A core that
        # takes a worker id over from a retired one of this process starts
        # after that one's last tick, as if its clock had reached it.
        last = after_tick
        halted = False  # stop() was called: no id of a later tick from here
        forward: Callable[[], int] | None = None  # where calls go once halted (a rebind)
        reclaims = lease is not None and lease._reclaimable
        given_up = False  # see relinquished

        def assert_held() -> None:
            # Raises if the lease may be gone. An implicit lease of a forked
            # child is then given up: this call raises, the next leases anew.
            nonlocal state, halted, given_up
            assert lease is not None
            try:
                lease._assert_held()
            except WorkerLeaseLostError:
                if reclaims and not lease._closed.is_set():
                    state, halted, given_up = stopped, True, True
                raise

        def slow(deadline: float) -> int:
            # Under the lock: a new tick, a used-up tick, a clock step, a lease.
            # ``deadline``: when waiting for the previous holder's mark gives up.
            nonlocal state, last
            if halted:
                if forward is not None:
                    raise _Wait()  # the caller goes to the generator's new binding
                if given_up:
                    raise _Wait(rebind=True)
                if lease is not None:
                    assert_held()  # says why (closed, lost)
                raise WorkerLeaseLostError("this generator was stopped; bind it again")
            while True:
                t = clock()  # read anew under the lock: every earlier holder read before
                now = (t - epoch_ns) // unit_ns
                if now < last:
                    back = last - now
                    if not waits or back > max_back_ticks:
                        raise ClockMovedBackwardsError(back * unit_ns / 1e6)
                    raise _Wait(min(back * unit_ns / 1e9, 0.01))  # wait the step out
                s = state
                if now == last:
                    if s is stopped:  # a retired core's tick: wait for the next one
                        raise _Wait(((now + 1) * unit_ns + epoch_ns - t) / 1e9)
                    value = next(s[2])
                    if value <= s[3]:
                        return value
                    sleep(0)  # every sequence value of this tick is used
                    continue
                if lease is not None:
                    # After the clock was read: a pause before this line shows here.
                    assert_held()
                    if now <= floor:
                        if deadline and monotonic() >= deadline:
                            raise _floor_error(lease, last_ms_of(floor), t)
                        ahead_s = ((floor + 1) * unit_ns + epoch_ns - t) / 1e9
                        raise _Wait(min(ahead_s, 0.05), floor=True)
                    hi = ((lease._mark_ms + 1) * 1_000_000 - epoch_ns) // unit_ns - 1
                    if now > hi:
                        raise _Wait(extend_to_ms=last_ms_of(now))
                if now >= tick_limit:
                    raise InvalidSnowflakeError(
                        f"the layout's timestamp field ran out at {layout.exhausted_at}"
                    )
                first = (now << shift) | worker_part
                counter = itertools.count(first)
                value = next(counter)
                start = epoch_ns + now * unit_ns
                state = (start, start + unit_ns, counter, first | seq_max, now)
                last = now
                return value

        acquire, release = lock.acquire, lock.release

        def slow_locked(on_fork: Callable[[], int]) -> int:
            deadline = 0.0
            while True:
                acquire()
                try:
                    return slow(deadline)
                except _Wait as wait:
                    pending = wait
                finally:
                    release()
                # Outside the lock: the wait may hand an event loop to other tasks.
                if forward is not None:
                    return forward()
                if pending.rebind:
                    return on_fork()
                if pending.extend_to_ms >= 0:
                    assert lease is not None
                    lease._extend_mark(pending.extend_to_ms)
                    continue
                if pending.floor and not deadline:
                    assert lease is not None
                    deadline = monotonic() + lease.max_wait
                _pause(pending.seconds)

        def minter(on_fork: Callable[[], int]) -> Callable[[], int]:
            if _LOCK_FREE:

                def mint() -> int:
                    # Before anything else: a forked child must not use the
                    # state behind it, nor wait for a lock a parent's thread held.
                    if stamp[0] != token:
                        return on_fork()
                    # No lock: the state is read with one load, and next() on
                    # its counter is one atomic step under the GIL, so two
                    # threads never get the same value. A thread that read the
                    # state of a tick that just ended still mints in that tick,
                    # below its cap: unique, and under the lease's mark.
                    s = state
                    t = clock()
                    if s[0] <= t < s[1]:  # the same tick: most calls
                        value = next(s[2])
                        if value <= s[3]:
                            return value
                    return slow_locked(on_fork)

            else:  # free-threaded Python: itertools.count is not atomic there

                def mint() -> int:
                    if stamp[0] != token:
                        return on_fork()
                    acquire()
                    try:
                        s = state
                        t = clock()
                        if s[0] <= t < s[1]:
                            value = next(s[2])
                            if value <= s[3]:
                                return value
                    finally:
                        release()
                    return slow_locked(on_fork)

            return mint

        def stop(successor: Callable[[], int] | None = None) -> int:
            # No id of a later tick is minted after this returns (a thread that
            # read the current tick's state may still mint in it); returns the
            # last tick (-1 if none), which a successor must pass. Calls that
            # reach the slow path afterwards go to ``successor`` if given.
            nonlocal state, halted, forward
            with lock:
                state = stopped
                halted = True
                forward = successor
                return last

        self.minter = minter
        self.stop = stop
        self.last_ms_of = last_ms_of
        self.relinquished = lambda: given_up


def _floor_error(lease: _Lease[Any], floor_ms: int, t: int) -> ClockSkewError:
    # The previous holder of the worker id minted up to ``floor_ms`` on its
    # clock; this one stayed behind it for the whole of max_wait.
    ahead_ms = floor_ms - t // 1_000_000
    return ClockSkewError(
        f"worker id {lease.worker_id} was last used by a process whose ids reach "
        f"{ahead_ms} ms past this host's clock (its clock ran ahead, or this one "
        f"is behind); waited {lease.max_wait:g} s for this clock to pass them. Fix "
        "the clocks (NTP), or raise WorkerLease(max_wait=...)"
    )


def _check_max_backwards(value: object) -> float:
    # 0 is allowed: refuse every step back
    return check_seconds(
        value, "max_backwards_ms", InvalidSnowflakeError, max=86400e3, zero=True, unit="ms"
    )


class Snowflake:
    """A thread-safe snowflake id generator; also a zero-argument column default.

    ``worker_id`` is an int unique among live processes minting with the same
    layout, or a :class:`~sqlalchemy_seqkeys.WorkerLease` /
    :class:`~sqlalchemy_seqkeys.AsyncWorkerLease` (which makes it so, and which
    this generator then checks), or left out: a generator declared before its
    worker id exists (with the models, imported before the application has
    a database) is bound at startup with :meth:`bind`, and until then raises
    :class:`~sqlalchemy_seqkeys.NoWorkerIdError`. ``on_clock_backwards="wait"``
    waits out a backward step of up to ``max_backwards_ms`` and raises beyond
    it; ``"raise"`` raises at once. ``after_fork`` (a function returning a new
    worker id) lets a forked child with a fixed worker id go on minting;
    without it the child's first call raises (a leased generator leases a new
    id in the child instead). ``transform`` is applied to every id
    (:func:`rotate_digits`, a ``functools.partial`` of it, or
    :func:`~sqlalchemy_seqkeys.reverse_bits`); ``clock`` returns nanoseconds
    since the Unix epoch (default: ``time.time_ns``, or the lease's clock; a
    lease also reads it from its renewal thread, to write its high-water mark).

    Generators bound to one lease share one sequence (one worker id), so
    they never mint the same id; they must agree on the layout, the clock and
    the clock-backwards policy. A bad argument raises
    :class:`~sqlalchemy_seqkeys.InvalidSnowflakeError` before anything else
    happens.

    Under asyncio, a wait (a clock step back, the previous holder's mark)
    inside SQLAlchemy's greenlet (a column default under ``AsyncSession``)
    awaits, and the loop runs on; called straight from a coroutine the
    generator cannot await, and such a wait (at most ``max_backwards_ms``)
    holds the loop: pass ``on_clock_backwards="raise"`` where that matters.

    Example::

        from sqlalchemy import BigInteger
        from sqlalchemy_seqkeys import Snowflake, rotate_digits

        ids = Snowflake(worker_id=12, transform=rotate_digits)
        id: Mapped[int] = mapped_column(BigInteger, primary_key=True, default=ids)
    """

    def __init__(
        self,
        worker_id: int | WorkerLease | AsyncWorkerLease | None = None,
        *,
        layout: SnowflakeLayout | None = None,
        on_clock_backwards: str = "wait",
        max_backwards_ms: float = 1000,
        after_fork: Callable[[], int] | None = None,
        transform: Callable[[int], int] | None = None,
        clock: Callable[[], int] | None = None,
    ) -> None:
        if layout is not None and not isinstance(layout, SnowflakeLayout):
            raise InvalidSnowflakeError(f"layout must be a SnowflakeLayout, not {layout!r}")
        self.layout = layout or SnowflakeLayout()
        if on_clock_backwards not in ("wait", "raise"):
            raise InvalidSnowflakeError(
                f"on_clock_backwards must be 'wait' or 'raise', not {on_clock_backwards!r}"
            )
        self.on_clock_backwards = on_clock_backwards
        self.max_backwards_ms = _check_max_backwards(max_backwards_ms)
        for name, fn in (("after_fork", after_fork), ("transform", transform), ("clock", clock)):
            if fn is not None and not callable(fn):
                raise InvalidSnowflakeError(f"{name} must be callable, not {fn!r}")
        self.after_fork = after_fork
        self.transform = transform
        self._inverse = None if transform is None else _inverse_of(transform)
        self._clock_arg = checked_clock(clock, "clock", InvalidSnowflakeError)
        #: the lease the generator is bound to (None: a fixed worker id, or unbound)
        self.lease: _Lease[Any] | None = None
        #: the worker id it mints with (None until bound)
        self.worker_id: int | None = None
        self._core: _Core | None = None
        # fixed worker id -> the last tick a core of this generator minted with
        # it before a rebind retired that core
        self._retired: dict[int, int] = {}
        self._mint = self._unbound
        self._raw: Callable[[], int] = self._unbound
        if worker_id is not None:
            self.bind(worker_id)

    def bind(self, worker_id: int | WorkerLease | AsyncWorkerLease) -> None:
        """Give the generator its worker id: a lease (at startup), or a fixed int.

        For a generator declared with the models (``ids = Snowflake()``), bound
        once the application has its database: in a FastAPI lifespan, a Flask
        app factory, a Celery ``worker_process_init`` handler. Binding again
        (a new lease after the old one was lost) is safe while other threads
        and tasks mint: calls already under way finish on the old binding
        (which stays valid, or raises), later ones use the new one, and no id
        is minted twice across the switch. Rebinding to a fixed worker id this
        generator used before starts after the last tick it minted there;
        rebinding to the same fixed id or the same lease changes nothing.
        Generators bound to one lease share one sequence (see the class).

        Raises :class:`~sqlalchemy_seqkeys.InvalidSnowflakeError` for a bad
        worker id (nothing changes), :class:`~sqlalchemy_seqkeys.NoWorkerIdError`
        for an :class:`~sqlalchemy_seqkeys.AsyncWorkerLease` not yet claimed,
        and :class:`~sqlalchemy_seqkeys.WorkerLeaseLostError` for a lease no
        longer held.

        Example::

            >>> ids = Snowflake()
            >>> ids.bind(42)
            >>> ids.decode(ids()).worker_id
            42
        """
        lease: _Lease[Any] | None = None
        fixed = -1
        if getattr(type(worker_id), "_is_worker_lease", False):
            lease = worker_id  # type: ignore[assignment]
        else:
            fixed = self._check_worker(worker_id)
        with _fork.process_lock(_bind_locks):
            old = self._core
            # a core a parent process left behind is not touched: its lock may be held
            mine = old is not None and old.token == _fork.process_token()
            if lease is not None:
                core = self._core_of(lease)  # checks everything before anything changes
            elif mine and old is not None and old.lease is None and old.worker_id == fixed:
                return  # the same fixed id: keep its sequence
            else:
                core = self._own_core(fixed)
            if core is old:
                return
            self.lease = lease
            self._use(core)
            if mine and old is not None and old.lease is None:
                # The fixed id's core is ours alone: no id of a later tick comes
                # from it, and calls that reach it now go to the new binding. A
                # lease's core stays with the lease (other generators may share it).
                raw = self._raw
                tick = old.stop(lambda: raw())
                if tick >= 0:
                    self._retired[old.worker_id] = max(self._retired.get(old.worker_id, -1), tick)

    def _unbound(self) -> int:
        raise NoWorkerIdError(
            "this Snowflake has no worker id yet: bind it at startup with ids.bind(lease), "
            "a WorkerLease (or an AsyncWorkerLease, e.g. in a FastAPI lifespan: `async with "
            "AsyncWorkerLease(engine) as lease: ids.bind(lease)`), or ids.bind(worker_id) "
            "with an int no other live process mints with; or pass Snowflake(worker_id=...)"
        )

    def _check_worker(self, worker_id: object) -> int:
        return check_int(
            worker_id,
            "worker_id",
            InvalidSnowflakeError,
            min=0,
            max=self.layout.max_worker_id,
            hint=f"{self.layout.worker_bits} worker bits; or pass a WorkerLease",
        )

    def _own_core(self, worker_id: int) -> _Core:
        return _Core(
            self.layout,
            worker_id,
            self._clock_arg or time.time_ns,
            waits=self.on_clock_backwards == "wait",
            max_backwards_ms=self.max_backwards_ms,
            lease=None,
            after_tick=self._retired.get(worker_id, -1),
        )

    def _core_of(self, lease: _Lease[Any]) -> _Core:
        # Every generator bound to one lease shares its core: one worker id,
        # one sequence.
        if lease.max_worker_id > self.layout.max_worker_id:
            raise InvalidSnowflakeError(
                f"the lease hands out ids up to {lease.max_worker_id}, but the layout "
                f"holds {self.layout.max_worker_id}; pass max_worker_id= to WorkerLease"
            )
        if self.layout.time_unit * 4 > timedelta(seconds=lease.ttl):
            raise InvalidSnowflakeError(
                f"a tick of {self.layout.time_unit} is too long for a lease of {lease.ttl:g} s; "
                "the ttl must span at least four ticks"
            )
        # Checked before the lock too: in a forked child the parent's lease
        # refuses here, and its lock may have been held by a parent's thread.
        lease.check()
        with lease._bind_lock:
            lease.check()
            core = lease._core
            if core is None:
                core = _Core(
                    self.layout,
                    lease.worker_id,
                    self._clock_arg or lease.clock,
                    waits=self.on_clock_backwards == "wait",
                    max_backwards_ms=self.max_backwards_ms,
                    lease=lease,
                )
                lease._core = core
            elif (
                core.layout != self.layout
                or core.waits != (self.on_clock_backwards == "wait")
                or core.max_backwards_ms != self.max_backwards_ms
                or (self._clock_arg is not None and self._clock_arg is not core.clock)
            ):
                raise InvalidSnowflakeError(
                    f"another Snowflake bound to this lease (worker id {lease.worker_id}) uses "
                    "another layout, clock or clock-backwards policy; generators sharing a "
                    "worker id share its sequence and must agree on them"
                )
        return core

    def _use(self, core: _Core) -> None:
        self._core = core
        self.worker_id = core.worker_id
        mint = core.minter(self._after_fork)
        self._raw = mint
        transform = self.transform
        if transform is not None:

            def mint_transformed() -> int:
                return transform(mint())

            self._mint = mint_transformed
        else:
            self._mint = mint

    def __repr__(self) -> str:
        if self.worker_id is None:
            return "Snowflake(unbound)"
        return f"Snowflake(worker_id={self.worker_id})"

    _mint: Callable[[], int]

    if TYPE_CHECKING:

        def __call__(self) -> int:
            """Mint the next id (the column default)."""

    else:
        # ids() runs the minting closure with no Python frame of its own in
        # between (attrgetter is C): 15% more ids per second than a method.
        __call__ = property(
            operator.attrgetter("_mint"), doc="Mint the next id (the column default)."
        )

    def next_id(self) -> int:
        """Mint the next id.

        Example::

            >>> Snowflake(worker_id=1).next_id() > 0
            True
        """
        return self._mint()

    def decode(self, value: int) -> DecodedSnowflake:
        """Split an id minted by this generator (transform undone) into its fields.

        Example::

            >>> s = Snowflake(worker_id=9)
            >>> s.decode(s()).worker_id
            9
        """
        check_int(value, "value", InvalidSnowflakeError, min=0, max=MAX_INT64)
        if self.transform is not None:
            if self._inverse is None:
                raise InvalidSnowflakeError(
                    "decode() cannot undo a custom transform; pass ids before the transform"
                )
            value = self._inverse(value)
        layout = self.layout
        if not isinstance(value, int) or not 0 <= value <= MAX_INT64:
            raise InvalidSnowflakeError(f"{value!r} is not a snowflake id (0 .. 2**63 - 1)")
        ticks = value >> (layout.worker_bits + layout.sequence_bits)
        worker = (value >> layout.sequence_bits) & layout.max_worker_id
        sequence = value & ((1 << layout.sequence_bits) - 1)
        return DecodedSnowflake(layout.instant_of(ticks), worker, sequence)

    # -- fork ------------------------------------------------------------------

    def _after_fork(self) -> int:
        # The first call in a forked child (or every call, if it must refuse),
        # and the call after a child's implicit lease was lost. The threads
        # that race here take turns; the first one rebinds the generator, the
        # others find it done.
        with _fork.process_lock(_bind_locks):
            core = self._core
            if core is not None and (core.token != _fork.process_token() or core.relinquished()):
                self._rebind_in_child(core)
        return self._mint()

    def _rebind_in_child(self, core: _Core) -> None:
        if self.lease is not None and self.after_fork is None:
            child = self.lease._in_this_process(core.clock)
            self.lease = child
            self._use(self._core_of(child))
        elif self.after_fork is not None:
            self.lease = None
            self._use(self._own_core(self._check_worker(self.after_fork())))
        else:
            self._mint = self._refuse_in_child
            self._refuse_in_child()

    def _refuse_in_child(self) -> int:
        raise ForkedWorkerError(
            f"this process was forked from the one that owns worker id {self.worker_id}; "
            "minting here would repeat its ids. Bind it in this process (ids.bind(lease or "
            "worker id)), create the Snowflake after the fork, or pass "
            "after_fork=<function returning a new worker id>"
        )
