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

The generator refuses the three ways snowflake ids usually collide:

- **The clock steps back** (NTP, a VM migration): a step of at most
  ``max_backwards_ms`` is waited out; a larger one raises
  :class:`~sqlalchemy_seqkeys.ClockMovedBackwardsError` with its size, as the
  reference code does, instead of minting ids a second time.
- **A process forks**: the child would mint its parent's ids. With a fixed
  worker id the child's first call raises
  :class:`~sqlalchemy_seqkeys.ForkedWorkerError`, unless ``after_fork`` gives
  the child a worker id of its own.
- **A layout that silently runs out**: a layout with less than ten years of
  timestamp left is refused unless ``allow_short_life=True``.

On a range-partitioned engine (TiDB, Spanner) consecutive snowflake ids share
their leading digits and land on one region. :func:`rotate_digits` moves the
last decimal digit(s) to just after the first, which spreads consecutive ids
over 10 (100, 1000) regions; ``Snowflake(..., transform=rotate_digits)``
applies it to every id and :meth:`Snowflake.decode` undoes it.
"""

from __future__ import annotations

import functools
import os
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, NamedTuple

from .errors import ClockMovedBackwardsError, ForkedWorkerError, InvalidSnowflakeError

if TYPE_CHECKING:
    from .workers import WorkerLease

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
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise InvalidSnowflakeError(f"{field} must be an int >= 0, not {value!r}")
        if self.timestamp_bits < 1:
            raise InvalidSnowflakeError("timestamp_bits must be at least 1")
        total = self.timestamp_bits + self.worker_bits + self.sequence_bits
        if total > 63:
            raise InvalidSnowflakeError(
                f"the layout needs {total} bits, but a snowflake id has 63 (the sign bit stays "
                "0 so that ids are positive BIGINTs); take bits from one of the fields"
            )
        if self.epoch.tzinfo is None or self.epoch.utcoffset() is None:
            raise InvalidSnowflakeError(
                f"epoch {self.epoch!r} has no timezone; pass an aware datetime "
                "such as datetime(2020, 1, 1, tzinfo=timezone.utc)"
            )
        if not isinstance(self.time_unit, timedelta) or self.time_unit <= timedelta(0):
            raise InvalidSnowflakeError(
                f"time_unit must be a positive timedelta, not {self.time_unit!r}"
            )
        if self.time_unit % timedelta(microseconds=1):
            raise InvalidSnowflakeError("time_unit must be a whole number of microseconds")
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

    def worker_from(self, datacenter: int, machine: int, *, datacenter_bits: int = 5) -> int:
        """Compose a worker id from a datacenter id and a machine id (5 + 5 bits by default).

        Example::

            >>> SnowflakeLayout().worker_from(datacenter=3, machine=17)
            113
        """
        machine_bits = self.worker_bits - datacenter_bits
        if not 0 <= datacenter < (1 << datacenter_bits) or not 0 <= machine < (1 << machine_bits):
            raise InvalidSnowflakeError(
                f"datacenter must be 0..{(1 << datacenter_bits) - 1} and machine "
                f"0..{(1 << machine_bits) - 1}, not {datacenter} and {machine}"
            )
        return (datacenter << machine_bits) | machine

    def compose(self, ticks: int, worker_id: int, sequence: int) -> int:
        """Pack the three fields into an id (no transform).

        Example::

            >>> SnowflakeLayout().compose(1, 1, 1)
            4198401
        """
        return (
            (ticks << (self.worker_bits + self.sequence_bits))
            | (worker_id << self.sequence_bits)
            | sequence
        )

    def ticks_at(self, instant: datetime) -> int:
        """Ticks since the epoch at ``instant`` (aware), rounded down."""
        return (instant - self.epoch) // self.time_unit

    def instant_of(self, ticks: int) -> datetime:
        """The UTC instant at which tick ``ticks`` begins."""
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
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidSnowflakeError(f"digit rotation takes a non-negative int, not {value!r}")
    if not isinstance(digits, int) or isinstance(digits, bool) or digits < 1:
        raise InvalidSnowflakeError(f"digits must be an int >= 1, not {digits!r}")
    text = str(value)
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

    Example (the source's vectors)::

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


# -- the generator ---------------------------------------------------------------

_live: weakref.WeakSet[Snowflake] = weakref.WeakSet()


def _mark_forked() -> None:
    for generator in list(_live):
        generator._forked_in_child()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_mark_forked)


class Snowflake:
    """A thread-safe snowflake id generator; also a zero-argument column default.

    ``worker_id`` must be unique among live processes minting with the same
    layout. ``on_clock_backwards="wait"`` waits out a backward step of up to
    ``max_backwards_ms`` and raises beyond it; ``"raise"`` raises at once.
    ``after_fork`` (a function returning a new worker id) lets a forked child
    go on minting; without it the child's first call raises. ``transform`` is
    applied to every id (:func:`rotate_digits`, a ``functools.partial`` of
    it, or :func:`~sqlalchemy_seqkeys.reverse_bits`); ``clock`` returns
    nanoseconds since the Unix epoch (for tests).

    Example::

        from sqlalchemy import BigInteger
        from sqlalchemy_seqkeys import Snowflake, rotate_digits

        ids = Snowflake(worker_id=12, transform=rotate_digits)
        id: Mapped[int] = mapped_column(BigInteger, primary_key=True, default=ids)
    """

    def __init__(
        self,
        worker_id: int | WorkerLease,
        *,
        layout: SnowflakeLayout | None = None,
        on_clock_backwards: str = "wait",
        max_backwards_ms: float = 1000,
        after_fork: Callable[[], int] | None = None,
        transform: Callable[[int], int] | None = None,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.layout = layout or SnowflakeLayout()
        self.lease: WorkerLease | None = None
        if not isinstance(worker_id, int):  # a WorkerLease: its id, checked on every call
            self.lease = worker_id
            if worker_id.max_worker_id > self.layout.max_worker_id:
                raise InvalidSnowflakeError(
                    f"the lease hands out ids up to {worker_id.max_worker_id}, but the layout "
                    f"holds {self.layout.max_worker_id}; pass max_worker_id= to WorkerLease"
                )
            if after_fork is None:
                after_fork = self._lease_for_child
            worker_id = worker_id.worker_id
        self.worker_id = self._check_worker(worker_id)
        if on_clock_backwards not in ("wait", "raise"):
            raise InvalidSnowflakeError(
                f"on_clock_backwards must be 'wait' or 'raise', not {on_clock_backwards!r}"
            )
        if max_backwards_ms < 0:
            raise InvalidSnowflakeError("max_backwards_ms must be >= 0")
        self.on_clock_backwards = on_clock_backwards
        self.max_backwards_ms = max_backwards_ms
        self.after_fork = after_fork
        self.transform = transform
        self._inverse = None if transform is None else _inverse_of(transform)
        self._clock = clock
        self._lock = threading.Lock()
        self._build()
        _live.add(self)

    def _check_worker(self, worker_id: int) -> int:
        if (
            not isinstance(worker_id, int)
            or isinstance(worker_id, bool)
            or not (0 <= worker_id <= self.layout.max_worker_id)
        ):
            raise InvalidSnowflakeError(
                f"worker_id must be an int from 0 to {self.layout.max_worker_id} "
                f"({self.layout.worker_bits} worker bits), not {worker_id!r}"
            )
        return worker_id

    def __repr__(self) -> str:
        return f"Snowflake(worker_id={self.worker_id})"

    def _build(self) -> None:
        layout = self.layout
        unit_ns = layout.time_unit // timedelta(microseconds=1) * 1000
        epoch_ns = (layout.epoch - _UNIX_EPOCH) // timedelta(microseconds=1) * 1000
        shift = layout.worker_bits + layout.sequence_bits
        worker_part = self.worker_id << layout.sequence_bits
        seq_max = (1 << layout.sequence_bits) - 1
        tick_limit = 1 << layout.timestamp_bits
        clock = self._clock
        lock = self._lock
        transform = self.transform
        max_back_ticks = int(self.max_backwards_ms * 1_000_000 // unit_ns)
        waits = self.on_clock_backwards == "wait"

        last = -1
        sequence = 0

        def ticks() -> int:
            return (clock() - epoch_ns) // unit_ns

        def slow_path(now: int) -> int:
            # Called with the lock held when the tick did not simply move on.
            nonlocal last, sequence
            if now < last:
                back = last - now
                if not waits or back > max_back_ticks:
                    raise ClockMovedBackwardsError(back * unit_ns / 1e6)
                while now < last:  # wait the step out
                    time.sleep(min((last - now) * unit_ns / 1e9, 0.01))
                    now = ticks()
            if now == last:
                if sequence < seq_max:
                    sequence += 1
                    return now
                while now <= last:  # every sequence value of this tick is used
                    time.sleep(0)
                    now = ticks()
            if now >= tick_limit:
                raise InvalidSnowflakeError(
                    f"the layout's timestamp field ran out at {layout.exhausted_at}"
                )
            sequence = 0
            last = now
            return now

        # The state lives in closure cells, not attributes: this runs once per
        # row, and cell access is the cheapest state Python has.
        # acquire()/release() with try/finally: a third of the cost of "with lock".
        acquire, release = lock.acquire, lock.release
        lease = self.lease
        monotonic = time.monotonic

        def mint() -> int:
            nonlocal last, sequence
            acquire()
            try:
                now = (clock() - epoch_ns) // unit_ns
                if now == last and sequence < seq_max:  # most calls under load
                    sequence += 1
                elif now > last and now < tick_limit:
                    last = now
                    sequence = 0
                else:
                    now = slow_path(now)
                value = (now << shift) | worker_part | sequence
            finally:
                release()
            return value

        def mint_transformed() -> int:
            return transform(mint())  # type: ignore[misc]

        def mint_leased() -> int:
            # Refuse before minting once the lease may have passed to another process.
            if monotonic() >= lease._valid_until:  # type: ignore[union-attr]
                lease.check()  # type: ignore[union-attr]
            return mint() if transform is None else transform(mint())

        if lease is not None:
            self._mint = mint_leased
        else:
            self._mint = mint if transform is None else mint_transformed

    def __call__(self) -> int:
        """Mint the next id (the column default)."""
        return self._mint()

    _mint: Callable[[], int]

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

    def _forked_in_child(self) -> None:
        # The parent's lock may be held by a thread that does not exist here,
        # and its state must not be reused: the first call decides what to do.
        self._lock = threading.Lock()
        self._mint = self._first_call_after_fork

    def _lease_for_child(self) -> int:
        assert self.lease is not None
        self.lease = self.lease.for_child()
        return self.lease.worker_id

    def _first_call_after_fork(self) -> int:
        if self.after_fork is None:
            raise ForkedWorkerError(
                f"this process was forked from the one that owns worker id {self.worker_id}; "
                "minting here would repeat its ids. Create the Snowflake after the fork, "
                "or pass after_fork=<function returning a new worker id> (e.g. a lease)"
            )
        self.worker_id = self._check_worker(self.after_fork())
        self._build()
        return self._mint()
