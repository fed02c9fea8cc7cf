"""Snowflake ids: 63-bit integers minted in memory, no database round trip.

:class:`Snowflake` packs a tick count, a worker id no other live process
shares and a per-tick sequence into an id, after a :class:`SnowflakeLayout`;
a :class:`~sqlalchemy_seqkeys.WorkerLease` leases the worker id (through the
``_lease.Lease`` protocol: this module does not import ``workers``).

User guide (guarantees: clock steps, forks, worker ids that pass between
processes, and what is not covered): docs/strategies/snowflake.md.
"""

from __future__ import annotations

import functools
import itertools
import operator
import sys
import threading
import time
import weakref
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from . import _fork
from ._enum import ChoiceEnum
from ._layout_presets import UNIX_EPOCH
from ._lease import Lease, floor_error, is_lease
from ._validate import check_int, check_seconds, checked_clock, shown
from .errors import (
    ClockMovedBackwardsError,
    ForkedWorkerError,
    InvalidSnowflakeError,
    WorkerIdNotBoundError,
    WorkerLeaseLostError,
)
from .layout import DEFAULT_EPOCH, DecodedSnowflake, SnowflakeLayout

if TYPE_CHECKING:
    from .workers import AsyncWorkerLease, WorkerLease

__all__ = [
    "DEFAULT_EPOCH",
    "ClockBackwardsMode",
    "DecodedSnowflake",
    "Snowflake",
    "SnowflakeLayout",
    "rotate_digits",
    "unrotate_digits",
]

MAX_INT64 = 2**63 - 1

#: the largest id of any layout (an unsigned 64-bit one): 20 digits
_MAX_ANY_ID = 2**64 - 1


# -- digit rotation ------------------------------------------------------------


def _check_digits(value: object, digits: object, name: str) -> tuple[int, str, int]:
    """``value`` and ``digits`` checked for ``name`` (rotate_digits, unrotate_digits):
    the value, its decimal digits and the count to move."""
    hint = "digit rotation takes a non-negative int"
    checked = check_int(value, "value", InvalidSnowflakeError, min=0, hint=hint)
    if checked > _MAX_ANY_ID:
        # before str(): past 4,300 digits Python refuses to print it (a raw ValueError)
        raise InvalidSnowflakeError(
            f"value is an int of {checked.bit_length():,} bits, out of the range of "
            f"snowflake ids (0 .. 2**64 - 1 = {_MAX_ANY_ID}); digit rotation takes an id "
            "(one a BIGINT column holds: up to 2**63 - 1)"
        )
    text = str(checked)
    count = check_int(digits, "digits", InvalidSnowflakeError, min=1)
    if len(text) <= count:
        raise _too_small(checked, len(text), count, name)
    return checked, text, count


def _too_small(value: int, length: int, digits: int, name: str) -> InvalidSnowflakeError:
    # The first digit stays first: a value needs more digits than the count that moves.
    # An id has at most 20 digits: a larger count is not printed (it may not print).
    if digits < 100:
        needs = f"{_call(name, None, digits)} needs at least {digits + 1} digits"
    else:
        needs = f"{name} needs more digits than digits= asks to move"
    fewer = f"digits={length - 1} or less, or " if length > 1 else ""
    if name == "rotate_digits":
        fix = (
            f"Pass {fewer}a larger value; snowflake ids this small are minted just after "
            "the layout's epoch: give the layout an epoch further before the first id"
        )
    else:
        fix = f"Pass {fewer}a value that rotate_digits gave (with the same digits=)"
    verb = name.partition("_")[0]
    return InvalidSnowflakeError(
        f"{value} has {length} digit(s), too small to {verb}: {needs} (the first digit "
        f"stays first). {fix}"
    )


def _call(name: str, value: int | None, digits: int) -> str:
    """How the call reads in a message: ``rotate_digits(7, digits=2)``."""
    args = [] if value is None else [str(value)]
    if digits != 1 or value is None:
        args.append(f"digits={digits}")
    return f"{name}({', '.join(args)})"


def _checked(result: str, value: int, digits: int, name: str) -> int:
    rotated = int(result)
    if rotated > MAX_INT64:
        fix = (
            "ids whose last digits are large need a layout with fewer timestamp bits"
            if name == "rotate_digits"
            else "pass a value that rotate_digits gave from an id of at most 2**63 - 1, "
            "with the same digits="
        )
        raise InvalidSnowflakeError(
            f"{_call(name, value, digits)} gives {rotated}, past 2**63 - 1; it would not "
            f"fit a BIGINT ({fix})"
        )
    return rotated


def rotate_digits(value: int, digits: int = 1) -> int:
    """Move the last ``digits`` decimal digits to just after the first digit.

    Consecutive snowflake ids then differ in their second digit(s), which
    spreads them over ``10 ** digits`` key ranges of a range-partitioned engine.

    :param value: a snowflake id (a non-negative int, at most ``2**64 - 1``)
        with more than ``digits`` digits.
    :param digits: how many of the last digits move.

    Example (values from the TiDB snowflake-id article)::

        >>> rotate_digits(561632371724517376)
        566163237172451737
        >>> rotate_digits(561632371728711680)
        506163237172871168
    """
    checked, text, count = _check_digits(value, digits, "rotate_digits")
    return _checked(text[0] + text[-count:] + text[1:-count], checked, count, "rotate_digits")


def unrotate_digits(value: int, digits: int = 1) -> int:
    """Undo :func:`rotate_digits`.

    :param value: an id that :func:`rotate_digits` gave.
    :param digits: as given to :func:`rotate_digits`.

    Example::

        >>> unrotate_digits(566163237172451737)
        561632371724517376
    """
    checked, text, count = _check_digits(value, digits, "unrotate_digits")
    rotated = text[0] + text[1 + count :] + text[1 : 1 + count]
    return _checked(rotated, checked, count, "unrotate_digits")


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

#: (layout, worker id) -> the spans of ticks the sequences of this process minted
#: with that worker id (``_Span``: first and last tick): a sequence writes its own as it starts
#: a tick (its slow path, never the hot one), so they hold whatever way a sequence
#: ended (stopped, halted with its lease, dropped and collected, or still minting).
#: Any sequence, fixed or leased, mints only in ticks outside every span: a tick
#: inside one it waits out past the span's end (or refuses, as a clock step back),
#: whatever its clock (every clock reads Unix time, so a tick is a tick: a test clock
#: ahead of the real one delays the real one's ids, never an id minted twice). A
#: sequence starting soon after a span's end extends that span, so a worker id used
#: over and over keeps one. A forked child inherits the parent's spans: past ticks
#: only (it mints on none of the parent's worker ids unless bound to one).
_spans: dict[tuple[SnowflakeLayout, int], list[_Span]] = {}

#: (layout, fixed worker id) -> the sequence this process's generators with that fixed
#: worker id share (written under the bind lock; weak: a dropped one's spans remain)
_fixed: dict[tuple[SnowflakeLayout, int], weakref.ref[_Sequence]] = {}


def _same_clock(clock: Callable[[], int]) -> object:
    """The function behind a clock (a user's clock is wrapped once per generator and lease)."""
    return getattr(clock, "__wrapped__", clock)


#: spans a worker id keeps at most: past it the two closest merge (the ticks between them
#: count as minted: a clock that lands there waits, or refuses, as for a step back)
_MAX_SPANS = 32
#: the lock under which a span is added or merged, per process
_span_locks: dict[int, threading.Lock] = {}


class _Span:
    """Ticks ``lo`` to ``hi`` that sequences of this process minted in with one worker id
    (``into``: the span it was merged into, once removed)."""

    __slots__ = ("hi", "into", "lo")

    def __init__(self, tick: int) -> None:
        self.lo = self.hi = tick
        self.into: _Span | None = None


def _merge_closest(spans: list[_Span]) -> None:
    """Merge the two spans with the fewest ticks between them (under the span lock).

    The later one is removed and points to the merged one: a sequence that still
    notes its ticks there follows it.
    """
    spans.sort(key=operator.attrgetter("lo"))
    i = min(range(len(spans) - 1), key=lambda k: spans[k + 1].lo - spans[k].hi)
    first, second = spans[i], spans[i + 1]
    first.hi = max(first.hi, second.hi)
    second.into = first
    del spans[i + 1]


def _spans_of(layout: SnowflakeLayout, worker_id: int) -> list[_Span]:
    """The spans of ticks this process minted with ``worker_id`` (see ``_spans``)."""
    return _spans.setdefault((layout, worker_id), [])  # atomic under the GIL


def _used_through(spans: list[_Span], now: int) -> int:
    """The end of a span holding tick ``now``, or -1 if it is free. (A sequence asks
    for a tick past its own: a span holding it is another sequence's.)"""
    for span in spans:
        if span.lo <= now <= span.hi:
            return span.hi
    return -1


def _noted(span: _Span | None, spans: list[_Span], now: int, slack: int) -> _Span:
    """A sequence whose span is ``span`` (None: none yet) mints in tick ``now`` (free):
    the span that now ends there.

    A tick more than ``slack`` past the span starts another (the clock jumped: the
    ticks between stay free for other clocks).
    """
    while span is not None and span.into is not None:
        span = span.into  # merged into another (see _merge_closest)
    if span is None or now - span.hi > slack:
        span = _take_span(spans, now, slack)
    # never lower: a new span merged with a later one (_merge_closest) ends where that
    # one ended, and its ticks stay minted
    span.hi = max(span.hi, now)
    return span


def _take_span(spans: list[_Span], now: int, slack: int) -> _Span:
    """The span of a first tick ``now`` (free): the one ending last before it, if at most
    ``slack`` ticks before (a worker id used over and over keeps one span); else a new one."""
    with _fork.process_lock(_span_locks):
        best: _Span | None = None
        for span in spans:
            if span.hi < now and (best is None or span.hi > best.hi):
                best = span
        if best is not None and now - best.hi <= slack:
            return best
        span = _Span(now)
        spans.append(span)
        if len(spans) > _MAX_SPANS:
            _merge_closest(spans)
        return span


#: (start ns, end ns, counter, cap, tick) of the tick being minted
_TickState = tuple[int, int, "itertools.count[int]", int, int]
#: the state of no tick: every call goes to the slow path
_STOPPED: _TickState = (0, 0, itertools.count(), -1, -1)

#: Where the GIL runs one C call at a time, next() on an itertools.count is
#: atomic and the hot path needs no lock; free-threaded builds take the lock.
_LOCK_FREE = getattr(sys, "_is_gil_enabled", lambda: True)()


class _Route:
    """Where a generator's calls go once it is bound elsewhere: the new binding's sequence,
    the generator's fork handler and the new binding's own redirect (which a later rebind
    fills in turn). A call that began on an old binding follows these in a loop
    (``_Sequence.mint_slow``): one nested call a binding would overflow the stack when
    thousands of rebinds pass under a call that waits."""

    __slots__ = ("on_fork", "redirect", "sequence")

    def __init__(
        self, sequence: _Sequence, on_fork: Callable[[], int], redirect: _Redirect
    ) -> None:
        self.sequence = sequence
        self.on_fork = on_fork
        self.redirect = redirect


#: a binding's redirect: None until the generator is bound elsewhere (set under the lock)
_Redirect = list["_Route | None"]


class ClockBackwardsMode(
    ChoiceEnum, error=InvalidSnowflakeError, noun="value for on_clock_backwards"
):
    """What a :class:`Snowflake` does when the clock steps back (``on_clock_backwards=``).

    A plain string (``"wait"``, ``"raise"``) is accepted too.
    """

    #: wait out a step of up to ``max_backwards_ms``; raise beyond it
    WAIT = "wait"
    #: raise :class:`~sqlalchemy_seqkeys.ClockMovedBackwardsError` at once
    RAISE = "raise"


# -- the minting state -------------------------------------------------------------


class _Wait(Exception):  # noqa: N818 - a signal inside the slow path, never seen outside
    """Raised under a sequence's lock by a call that must wait; the wait happens outside it.

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
        until_ns: int = -1,
        read_ns: int = 0,
    ):
        self.seconds = seconds
        self.extend_to_ms = extend_to_ms
        self.floor = floor
        self.rebind = rebind  # the generator takes a new lease (see _Sequence.relinquished)
        # a wait for the clock to reach Unix ns ``until_ns`` (-1: another wait), which
        # read ``read_ns``: bounded, a clock that stands still must not hang the call
        self.until_ns = until_ns
        self.read_ns = read_ns


#: The monotonic clock that bounds a wait for the generator's clock (a name of its
#: own: a test replaces it, with ``_pause``, to wait in fake time).
_monotonic = time.monotonic

#: How much longer than a real clock needs a call waits for a clock that does not
#: advance, at least: then it raises (or four ticks, if longer).
_STALL_S = 1.0


def _pause(seconds: float) -> None:
    # Only on waiting paths: SQLAlchemy's greenlet bridge, imported when first needed.
    from ._aio import pause

    pause(seconds)


class _Ticks:
    """A layout's time field in nanoseconds of the Unix clock."""

    __slots__ = ("epoch_ns", "unit_ns")

    def __init__(self, layout: SnowflakeLayout) -> None:
        self.unit_ns = layout.time_unit // timedelta(microseconds=1) * 1000
        self.epoch_ns = (layout.epoch - UNIX_EPOCH) // timedelta(microseconds=1) * 1000

    def of(self, t_ns: int) -> int:
        """The tick holding Unix nanosecond ``t_ns``."""
        return (t_ns - self.epoch_ns) // self.unit_ns

    def start_ns(self, tick: int) -> int:
        """The Unix nanosecond where ``tick`` begins."""
        return self.epoch_ns + tick * self.unit_ns

    def last_ms(self, tick: int) -> int:
        """The Unix millisecond holding the last nanosecond of ``tick``."""
        return (self.epoch_ns + (tick + 1) * self.unit_ns - 1) // 1_000_000

    def through_ms(self, ms: int) -> int:
        """The tick holding the last nanosecond of Unix millisecond ``ms``."""
        return self.of((ms + 1) * 1_000_000 - 1)

    def before_ms(self, ms: int) -> int:
        """The last tick that ends by the end of Unix millisecond ``ms``."""
        return self.of((ms + 1) * 1_000_000) - 1


def _minter(
    sequence: _Sequence, on_fork: Callable[[], int], redirect: _Redirect
) -> Callable[[], int]:
    """One generator's hot path over ``sequence``: a flat function, built once.

    A function, not a bound method: called through ``Snowflake.__call__`` it
    costs 8% fewer nanoseconds an id (measured against a ``__slots__`` class
    with a ``mint`` method). It holds no state of its own: the current tick is
    ``sequence.box[0]``, which the sequence writes under its lock. Once the
    generator is bound elsewhere, ``redirect[0]`` holds the route to its new
    binding, and the slow path goes there (checked under the sequence's lock).
    """
    box = sequence.box
    clock = sequence.clock
    slow = sequence.mint_slow
    # This process's token in one load; 0 in a forked child until it resets
    # (read now: a sequence built before a test swapped the marker keeps the
    # one it was stamped under).
    stamp = sequence.stamp
    token = sequence.token

    if _LOCK_FREE:

        def mint() -> int:
            # Before anything else: a forked child must not use the state
            # behind it, nor wait for a lock a parent's thread held.
            if stamp[0] != token:
                return on_fork()
            # No lock: the state is read with one load, and next() on its
            # counter is one atomic step under the GIL, so two threads never
            # get the same value. A thread that read the state of a tick that
            # just ended still mints in that tick, below its cap: unique, and
            # under the lease's mark.
            s = box[0]
            t = clock()
            if s[0] <= t < s[1]:  # the same tick: most calls
                value = next(s[2])
                if value <= s[3]:
                    return value
            return slow(on_fork, redirect)

        return mint

    lock = sequence.lock

    def mint_locked() -> int:
        # Free-threaded Python: itertools.count is not atomic there.
        if stamp[0] != token:
            return on_fork()
        with lock:
            s = box[0]
            t = clock()
            if s[0] <= t < s[1]:
                value = next(s[2])
                if value <= s[3]:
                    return value
        return slow(on_fork, redirect)

    return mint_locked


def _transformed(
    mint: Callable[[], int], transform: Callable[[int], int], layout: SnowflakeLayout
) -> Callable[[], int]:
    """A minter's ids passed through a generator's ``transform``, kept to ints within the
    layout (a closure: its names are cell loads, cheaper than a bound method's attributes).

    Each result's class is checked (one attribute load and an identity test, about 12 ns
    an id): a float or a Decimal passes the range check alone, and many ids would round
    to one value.
    """
    limit = layout.max_id

    def mint_transformed() -> int:
        raw = mint()
        value = transform(raw)
        if value.__class__ is int and 0 <= value <= limit:
            return value
        return _checked_result(layout, raw, value)

    return mint_transformed


def _checked_result(layout: SnowflakeLayout, raw: int, value: object) -> int:
    """The slow path of a transform's result: an int subclass's value as a plain int;
    a result that is not an int, or is past the layout, raises (nothing is handed out)."""
    if isinstance(value, int) and not isinstance(value, bool):
        # int.__int__: the value itself (a subclass's own __int__ may say otherwise)
        plain = int.__int__(value)
        if 0 <= plain <= layout.max_id:
            return plain
        raise _past_layout(layout, raw, plain)
    raise InvalidSnowflakeError(
        f"the transform returned {shown(value)} ({type(value).__name__}) for id {raw}, not "
        "an int; it was not handed out (floats, Decimals and bools repeat or lose ids). "
        f"Make the transform return an int within 0 .. {layout.max_id}, computed in ints "
        "(int() of a rounded float would still repeat ids)"
    )


def _past_layout(layout: SnowflakeLayout, raw: int, value: int) -> InvalidSnowflakeError:
    limit = layout.max_id
    why = " (2**53 - 1: JavaScript would round it)" if limit == 2**53 - 1 else ""
    return InvalidSnowflakeError(
        f"the transform turned id {raw} into {value}, past the layout's largest id "
        f"{limit}{why}; it was not handed out. Use a transform whose ids stay within "
        f"0 .. {limit}, or a layout of more bits"
    )


def _check_transform_fits(layout: SnowflakeLayout, transform: Callable[[int], int]) -> None:
    # reverse_bits spreads ids over 63 bits: a narrower layout's column would not hold them
    from .bitreverse import reverse_bits

    func = transform.func if isinstance(transform, functools.partial) else transform
    if func is reverse_bits and layout.max_id < MAX_INT64:
        raise InvalidSnowflakeError(
            f"transform=reverse_bits spreads ids over 63 bits, past this layout's largest id "
            f"{layout.max_id} ({layout.total_bits} bits); use rotate_digits, or a 63-bit layout"
        )


class _Sequence:
    """The minting state of one worker id in one process: its ticks and their sequences.

    Shared by every :class:`Snowflake` bound to the same lease (they share
    the worker id, so they must share its sequence). Its slow path runs under
    its lock: a new tick, a used-up tick, a clock step, the lease's checks.
    """

    __slots__ = (
        "__weakref__",
        "_floor",
        "_forward",
        "_given_up",
        "_halted",
        "_last",
        "_max_back_ns",
        "_reclaims",
        "_seq_span",
        "_slack",
        "_span",
        "_spans",
        "_step",
        "_tick_limit",
        "_ticks",
        "_ts_shift",
        "_worker_part",
        "box",
        "clock",
        "layout",
        "lease",
        "lock",
        "max_backwards_ms",
        "stamp",
        "token",
        "waits",
        "worker_id",
    )

    def __init__(
        self,
        layout: SnowflakeLayout,
        worker_id: int,
        clock: Callable[[], int],
        *,
        waits: bool,
        max_backwards_ms: float,
        lease: Lease | None,
    ) -> None:
        self.layout = layout
        self.worker_id = worker_id
        self.clock = clock
        self.waits = waits
        self.max_backwards_ms = max_backwards_ms
        self.lease = lease
        self.token = _fork.process_token()
        self.stamp = _fork.marker()
        self.lock = threading.Lock()
        self._ticks = ticks = _Ticks(layout)
        # Shifted once: an id is (tick << ts_shift) | worker_part | (seq << seq_shift).
        self._ts_shift = layout.timestamp_shift
        self._worker_part = worker_id << layout.worker_shift
        self._step = 1 << layout.sequence_shift
        self._seq_span = ((1 << layout.sequence_bits) - 1) * self._step
        # a 64-bit layout in a BIGINT stops below 2**63: the layout says where
        self._tick_limit = layout.tick_limit
        # a step back is measured in ns, whatever the tick's length (a step of 2 ms
        # across the edge of a 1 s tick needs a 2 ms wait, not a tick's)
        self._max_back_ns = max_backwards_ms * 1_000_000
        # The previous holder's ids reach tick ``_floor``; ours start above it.
        self._floor = -1 if lease is None else ticks.through_ms(lease.floor_ms)
        self._reclaims = lease is not None and lease.reclaimable
        #: the current tick's state, read by every minter in one load
        self.box: list[_TickState] = [_STOPPED]
        # The current tick (the state's last field); -1: none yet.
        self._last = -1
        # The ticks every sequence of this process minted with this worker id, and
        # this one's span among them (None until its first tick): see ``_spans``.
        self._spans = _spans_of(layout, worker_id)
        self._span: _Span | None = None
        # a first tick at most this far past a span's end extends it (1 s of ticks)
        self._slack = max(1, 1_000_000_000 // ticks.unit_ns)
        self._halted = False  # stop() was called: no id of a later tick from here
        self._forward: _Route | None = None  # where calls go once halted
        self._given_up = False  # see relinquished

    def minter(self, on_fork: Callable[[], int], redirect: _Redirect) -> Callable[[], int]:
        """The hot path of this sequence for one generator (``on_fork``: its rebind;
        ``redirect``: where its calls go once it is bound elsewhere)."""
        return _minter(self, on_fork, redirect)

    def _publish(self, state: _TickState) -> None:
        # Under the lock.
        self.box[0] = state

    def relinquished(self) -> bool:
        """True once the implicit lease of a forked child was found lost: the
        generator's next call claims a new one (never mints here again)."""
        return self._given_up

    def stop(self, successor: _Route | None = None) -> int:
        """Mint no id of a later tick; return the last tick (-1 if none).

        A thread that read the current tick's state may still mint in it.
        Calls that reach the slow path afterwards go to ``successor`` if given.
        """
        with self.lock:
            self._publish(_STOPPED)
            self._halted = True
            self._forward = successor
            return self._last

    def give_up(self) -> None:
        """Mint no id of a later tick: a generator of this process with another clock or
        mode took the (fixed) worker id over. The generators on this sequence bind their
        worker id again at their next call that reaches the slow path (taking it back)."""
        with self.lock:
            self._publish(_STOPPED)
            self._halted = self._given_up = True

    def detach(self, redirect: _Redirect, successor: _Route) -> int:
        """One generator leaves this (shared) sequence: its calls that reach the slow
        path from now on go to ``successor``; return the last tick (-1 if none).

        Its calls that read the current tick's state may still mint in it.
        """
        with self.lock:
            redirect[0] = successor
            return self._last

    def halt(self) -> int:
        """Stop; the last Unix millisecond minted (-1 if none): what a successor must pass."""
        tick = self.stop(None)
        return self._ticks.last_ms(tick) if tick >= 0 else -1

    def mint_slow(self, on_fork: Callable[[], int], redirect: _Redirect) -> int:
        """The slow path: under the lock, waiting outside it.

        A call that finds the generator bound elsewhere goes on in the new binding's
        slow path, and so on to the current binding: in this loop, not one nested
        call a binding (a call may sleep through thousands of rebinds).
        """
        result = self._slow_here(on_fork, redirect)
        while isinstance(result, _Route):
            sequence = result.sequence
            if sequence.stamp[0] != sequence.token:  # as its minter checks first
                return result.on_fork()
            result = sequence._slow_here(result.on_fork, result.redirect)
        return result

    def _slow_here(self, on_fork: Callable[[], int], redirect: _Redirect) -> int | _Route:
        """An id of this sequence, or the route to the binding the generator moved to."""
        deadline = 0.0
        lease = self.lease
        # A wait for the clock (a used-up tick, a step back) is bounded: ``target`` is
        # the Unix ns it waits for, since ``since`` (monotonic s), allowing ``allow`` s.
        target = -1
        since = allow = checked = 0.0
        while True:
            if target >= 0:
                # read before the clock: a late wake-up never counts against the clock
                checked = _monotonic()
            with self.lock:
                moved = redirect[0]  # the generator was bound elsewhere
                if moved is None:
                    try:
                        return self._next_tick(deadline)
                    except _Wait as wait:
                        pending = wait
            # Outside the lock: the wait may hand an event loop to other tasks.
            if moved is not None:
                return moved
            if self._forward is not None:
                return self._forward
            if pending.rebind:
                return on_fork()
            if pending.extend_to_ms >= 0:
                assert lease is not None
                lease.extend_mark(pending.extend_to_ms)
                continue
            if pending.floor and not deadline:
                assert lease is not None
                deadline = time.monotonic() + lease.max_wait
            if pending.until_ns >= 0:
                left = (pending.until_ns - pending.read_ns) / 1e9  # what a real clock needs
                if pending.until_ns > target:
                    # a first wait, or the clock moved on (a later tick was minted in)
                    target, since, allow = pending.until_ns, _monotonic(), left
                else:
                    allow = max(allow, left)  # a step back within max_backwards_ms
                    if checked - since >= allow + self._patience():
                        raise self._stalled(pending, checked - since)
            _pause(pending.seconds)

    def _patience(self) -> float:
        """How much longer than a real clock needs a call waits for the clock (s)."""
        return max(_STALL_S, 4 * self._ticks.unit_ns / 1e9)

    def _stalled(self, wait: _Wait, waited: float) -> InvalidSnowflakeError:
        ticks = self._ticks
        tick = ticks.of(wait.until_ns)
        at = UNIX_EPOCH + timedelta(microseconds=wait.until_ns // 1000)
        per_tick = 1 << self.layout.sequence_bits
        return InvalidSnowflakeError(
            f"the clock does not advance: the next id of worker id {self.worker_id} needs "
            f"tick {tick} of the layout or later (from {at.isoformat()}), and after "
            f"{waited:.2f} s of waiting the clock still reads {wait.read_ns} ns (tick "
            f"{ticks.of(wait.read_ns)}). No id was handed out. Pass a clock that advances "
            "with time (clock= of the Snowflake or of its WorkerLease; time.time_ns is "
            f"one): a test's fake clock must be moved on by a tick ({ticks.unit_ns / 1e6:g} "
            f"ms) once the {per_tick} ids of a tick are used up, and past a step back"
        )

    def _assert_held(self) -> None:
        # Raises if the lease may be gone. An implicit lease of a forked child
        # is then given up: this call raises, the next leases anew.
        lease = self.lease
        assert lease is not None
        try:
            lease.assert_held()
        except WorkerLeaseLostError:
            if self._reclaims and not lease.closed:
                self._publish(_STOPPED)
                self._halted = self._given_up = True
            raise

    def _refuse_halted(self) -> None:
        if self._forward is not None:
            raise _Wait()  # the caller goes to the generator's new binding
        if self._given_up:
            raise _Wait(rebind=True)
        if self.lease is not None:
            self._assert_held()  # says why (closed, lost)
        raise WorkerLeaseLostError("this generator was stopped; bind it again")

    def _next_tick(self, deadline: float) -> int:
        # Under the lock. ``deadline``: when waiting for the previous holder's mark gives up.
        if self._halted:
            self._refuse_halted()
        ticks = self._ticks
        t = self.clock()  # read anew under the lock: every earlier holder read before
        now = ticks.of(t)
        last = self._last
        if now < 0:
            raise _before_epoch(self.layout, t)
        if now > last:
            used = _used_through(self._spans, now)
            if used >= 0:  # another sequence of this process minted in this tick
                self._publish(_STOPPED)  # (a tick ours ended before it: it may be this one)
                self._last = last = used
        if now < last:
            # The clock read at least the start of tick ``last`` when it was minted in:
            # it stepped back by at least ``step`` ns, and has that far to go to reach
            # it again. Waited out, the id is minted in ``last`` past its sequence so
            # far (or, used up, in the next tick): never one of a used tick again.
            until = ticks.start_ns(last)
            step = until - t
            if not self.waits or step > self._max_back_ns:
                raise ClockMovedBackwardsError(step / 1e6)
            raise _Wait(min(step / 1e9, 0.01), until_ns=until, read_ns=t)
        if now == last:
            s = self.box[0]
            if s is not _STOPPED:  # _STOPPED: a tick another sequence minted in
                value = next(s[2])
                if value <= s[3]:
                    return value
            # This tick is used up (or not ours): wait for the next one, outside
            # the lock (in SQLAlchemy's greenlet the event loop runs meanwhile).
            until = ticks.start_ns(now + 1)
            raise _Wait((until - t) / 1e9, until_ns=until, read_ns=t)
        if self.lease is not None:
            self._check_lease(now, t, deadline)
        if now >= self._tick_limit:
            raise InvalidSnowflakeError(
                f"the layout's timestamp field ran out at {self.layout.exhausted_at}"
            )
        first = (now << self._ts_shift) | self._worker_part
        counter = itertools.count(first, self._step)
        value = next(counter)
        start = ticks.start_ns(now)
        # noted before any id of this tick is handed out
        self._span = _noted(self._span, self._spans, now, self._slack)
        self._publish((start, start + ticks.unit_ns, counter, first + self._seq_span, now))
        self._last = now
        return value

    def _check_lease(self, now: int, t: int, deadline: float) -> None:
        # After the clock was read: a pause before this line shows here.
        lease = self.lease
        assert lease is not None
        self._assert_held()
        ticks = self._ticks
        if now <= self._floor:
            if deadline and time.monotonic() >= deadline:
                ahead_ms = ticks.last_ms(self._floor) - t // 1_000_000
                raise floor_error(lease.worker_id, ahead_ms, lease.max_wait, type(lease).__name__)
            ahead_s = (ticks.start_ns(self._floor + 1) - t) / 1e9
            raise _Wait(min(ahead_s, 0.05), floor=True)
        if now > ticks.before_ms(lease.mark_ms):
            raise _Wait(extend_to_ms=ticks.last_ms(now))


def _before_epoch(layout: SnowflakeLayout, t: int) -> InvalidSnowflakeError:
    # A tick before 0: the clock has not reached the layout's epoch.
    now = UNIX_EPOCH + timedelta(microseconds=t // 1000)
    return InvalidSnowflakeError(
        f"the layout's epoch {layout.epoch.isoformat()} is ahead of the clock "
        f"({now.isoformat()}): ids count ticks from the epoch and none exists before it. "
        "Give the layout an epoch in the past (the day of the first id), or check the clock"
    )


def _check_max_backwards(value: object) -> float:
    # 0 is allowed: refuse every step back
    return check_seconds(
        value, "max_backwards_ms", InvalidSnowflakeError, max=86400e3, zero=True, unit="ms"
    )


def _check_lease_fits(layout: SnowflakeLayout, lease: Lease) -> None:
    # Snowflake.bind(lease): the lease's worker ids and ttl must suit the layout.
    if lease.max_worker_id > layout.max_worker_id:
        raise InvalidSnowflakeError(
            f"the lease hands out ids up to {lease.max_worker_id}, but the layout "
            f"holds {layout.max_worker_id}; pass max_worker_id= to WorkerLease"
        )
    if layout.time_unit * 4 > timedelta(seconds=lease.ttl):
        raise InvalidSnowflakeError(
            f"a tick of {layout.time_unit} is too long for a lease of {lease.ttl:g} s; "
            "the ttl must span at least four ticks"
        )


def _untransformed(
    layout: SnowflakeLayout,
    value: object,
    transform: Callable[[int], int] | None,
    inverse: Callable[[int], int] | None,
) -> int:
    # Snowflake.decode: ``value`` checked, its transform undone, checked again.
    largest = layout.max_id
    checked = check_int(value, "value", InvalidSnowflakeError, min=0, max=max(largest, MAX_INT64))
    if transform is not None:
        if inverse is None:
            raise InvalidSnowflakeError(
                "decode() cannot undo a custom transform; pass ids before the transform"
            )
        checked = inverse(checked)
    if not isinstance(checked, int) or not 0 <= checked <= largest:
        raise InvalidSnowflakeError(
            f"{checked!r} is not a snowflake id of this layout (0 .. {largest})"
        )
    return checked


def _fixed_sequence(new: _Sequence) -> _Sequence:
    """Under the bind lock: the sequence of a generator of this process with a fixed
    worker id: the one its generators use already, or ``new`` (unused yet).

    Generators with one fixed worker id share its sequence, as a lease's do: they never
    mint the same id. The live one of another clock or mode is given up (its generators
    take the worker id back at their next call that reaches the slow path), and ``new``
    goes on past its ticks (``_spans``).
    """
    key = (new.layout, new.worker_id)
    ref = _fixed.get(key)
    live = None if ref is None else ref()
    if live is not None and live.token == _fork.process_token() and not live._halted:
        if (
            live.waits == new.waits
            and live.max_backwards_ms == new.max_backwards_ms
            and _same_clock(new.clock) is _same_clock(live.clock)
        ):
            return live
        live.give_up()
    _fixed[key] = weakref.ref(new)
    return new


def _hand_over(old: _Sequence, new: _Sequence, route: _Route, redirect: _Redirect) -> None:
    """A generator rebound from ``old`` to ``new`` (under the bind lock, before ``new`` is used).

    The generator mints no id of a later tick on ``old``: its calls that reach
    the slow path there (``redirect``) follow ``route`` to ``new``, and ``new``
    mints in no tick this process minted in with its worker id (``_spans``, which
    ``old`` wrote as it minted).
    """
    with new.lock:
        # ``new`` may be minting for other generators: it goes on from its next
        # tick (even a call forwarded from ``old`` waits here), past the ticks
        # ``old`` minted if it has the same worker id (its span).
        new._publish(_STOPPED)
        # ``old`` stays with the lease or the fixed worker id (other generators
        # may share it); only this generator's calls leave it.
        old.detach(redirect, route)


def _layout_of(layout: object) -> SnowflakeLayout:
    """A Snowflake's ``layout=``, checked (None: the default one)."""
    if layout is not None and not isinstance(layout, SnowflakeLayout):
        raise InvalidSnowflakeError(f"layout must be a SnowflakeLayout, not {layout!r}")
    checked = layout or SnowflakeLayout()
    # a layout made long ago may have aged: warn or refuse as a new one would
    checked.check_life()
    return checked


def _check_callables(**functions: object) -> None:
    """A Snowflake's function arguments are None or callable."""
    for name, fn in functions.items():
        if fn is not None and not callable(fn):
            raise InvalidSnowflakeError(f"{name} must be callable, not {fn!r}")


class Snowflake:
    """A thread-safe snowflake id generator; also a zero-argument column default.

    Generators bound to one lease share one sequence (one worker id), so they
    never mint the same id (they must agree on the layout, the clock and the
    clock-backwards mode); so do a process's generators with one fixed worker
    id and layout. A bad argument raises
    :class:`~sqlalchemy_seqkeys.InvalidSnowflakeError` before anything else
    happens. Under asyncio, a wait (a clock step back, the previous holder's
    mark, a tick whose sequence is used up) inside SQLAlchemy's greenlet (a
    column default under ``AsyncSession``) awaits, and the loop runs on;
    called straight from a coroutine the generator cannot await, and such a
    wait (at most ``max_backwards_ms``, or the rest of a tick) holds the
    loop: pass ``on_clock_backwards="raise"`` where that matters. A transform's
    result that is no int, or past ``layout.max_id``, raises: never handed out.

    :param worker_id: an int unique among live processes minting with the
        same layout; or a :class:`~sqlalchemy_seqkeys.WorkerLease` /
        :class:`~sqlalchemy_seqkeys.AsyncWorkerLease` (which makes it so, and
        which this generator then checks); or left out: a generator declared
        with the models is bound at startup with :meth:`bind`, and until then
        raises :class:`~sqlalchemy_seqkeys.WorkerIdNotBoundError`.
    :param layout: the :class:`SnowflakeLayout` (default: 41/10/12 bits, milliseconds).
    :param on_clock_backwards: a :class:`ClockBackwardsMode` or its string:
        ``"wait"`` waits out a backward step of up to ``max_backwards_ms`` and
        raises beyond it; ``"raise"`` raises at once.
    :param max_backwards_ms: the longest step back that ``"wait"`` waits out.
    :param after_fork: a function returning a new worker id, which lets a
        forked child with a fixed worker id go on minting; without it the
        child's first call raises (a leased generator leases a new id in the
        child instead).
    :param transform: applied to every id: :func:`rotate_digits`, a
        ``functools.partial`` of it, or :func:`~sqlalchemy_seqkeys.reverse_bits`
        (which :meth:`decode` undoes), or any function from an int to an int.
    :param clock: nanoseconds since the Unix epoch (default ``time.time_ns``,
        or the lease's clock; a lease also reads it to write its high-water mark).
        One still short of the tick needed 1 s (or four ticks) after a real clock
        would be past it (a frozen test clock) raises ``InvalidSnowflakeError``.

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
        on_clock_backwards: ClockBackwardsMode | str = ClockBackwardsMode.WAIT,
        max_backwards_ms: float = 1000,
        after_fork: Callable[[], int] | None = None,
        transform: Callable[[int], int] | None = None,
        clock: Callable[[], int] | None = None,
    ) -> None:
        self.layout = _layout_of(layout)
        #: the :class:`ClockBackwardsMode` (it compares equal to its string)
        self.on_clock_backwards = ClockBackwardsMode.coerce(on_clock_backwards)
        self.max_backwards_ms = _check_max_backwards(max_backwards_ms)
        _check_callables(after_fork=after_fork, transform=transform, clock=clock)
        if transform is not None:
            _check_transform_fits(self.layout, transform)
        self.after_fork = after_fork
        self.transform = transform
        self._inverse = None if transform is None else _inverse_of(transform)
        self._clock_arg = checked_clock(clock, "clock", InvalidSnowflakeError)
        #: the lease the generator is bound to (None: a fixed worker id, or unbound)
        self.lease: Lease | None = None
        #: the worker id it mints with (None until bound)
        self.worker_id: int | None = None
        self._sequence: _Sequence | None = None
        # where the current binding's calls go once the generator is bound elsewhere
        self._redirect: _Redirect = [None]
        self._mint: Callable[[], int] = self._unbound
        self._raw_mint: Callable[[], int] = self._unbound
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
        is minted twice across the switch. No generator of this process mints
        in a tick another one of this process (of the same layout, whatever its
        clock, fixed or leased, gone or live, but for a fixed id a live lease of
        this process holds) minted in with the same worker id: it waits past
        them if need be. Rebinding to the same fixed id or the same lease
        changes nothing.

        :param worker_id: a started :class:`~sqlalchemy_seqkeys.WorkerLease` /
            :class:`~sqlalchemy_seqkeys.AsyncWorkerLease`, or an int.
        :raises InvalidSnowflakeError: a bad worker id (nothing changes).
        :raises WorkerIdNotBoundError: a lease not started yet.
        :raises WorkerLeaseLostError: a lease no longer held.

        Example::

            >>> ids = Snowflake()
            >>> ids.bind(42)
            >>> ids.decode(ids()).worker_id
            42
        """
        lease: Lease | None = None
        fixed = -1
        if is_lease(worker_id):
            lease = worker_id
        else:
            fixed = self._check_worker(worker_id)
        with _fork.process_lock(_bind_locks):
            old = self._sequence
            # a sequence a parent process left behind is not touched: its lock may be held
            mine = old is not None and old.token == _fork.process_token()
            if lease is not None:
                sequence = self._sequence_of(lease)  # checks everything before anything changes
            elif mine and old is not None and old.lease is None and old.worker_id == fixed:
                return  # the same fixed id: keep its sequence
            else:
                sequence = self._own_sequence(fixed)
            if sequence is old:
                return
            redirect: _Redirect = [None]
            raw = sequence.minter(self._after_fork, redirect)
            if mine and old is not None:
                route = _Route(sequence, self._after_fork, redirect)
                _hand_over(old, sequence, route, self._redirect)
            self.lease = lease
            self._use(sequence, raw, redirect)

    def _unbound(self) -> int:
        raise WorkerIdNotBoundError(
            "this Snowflake has no worker id yet: bind it at startup with ids.bind(lease), "
            "a started WorkerLease (or an AsyncWorkerLease, e.g. in a FastAPI lifespan: `async "
            "with AsyncWorkerLease(engine) as lease: ids.bind(lease)`), or ids.bind(worker_id) "
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

    def _new_sequence(
        self, worker_id: int, clock: Callable[[], int], lease: Lease | None
    ) -> _Sequence:
        return _Sequence(
            self.layout,
            worker_id,
            clock,
            waits=self.on_clock_backwards is ClockBackwardsMode.WAIT,
            max_backwards_ms=self.max_backwards_ms,
            lease=lease,
        )

    def _own_sequence(self, worker_id: int) -> _Sequence:
        clock = self._clock_arg or time.time_ns
        return _fixed_sequence(self._new_sequence(worker_id, clock, None))

    def _sequence_of(self, lease: Lease) -> _Sequence:
        # Every generator bound to one lease shares its sequence: one worker
        # id, one sequence.
        _check_lease_fits(self.layout, lease)
        # Checked before the lease's lock too: in a forked child the parent's
        # lease refuses here, and its lock may have been held by a parent's thread.
        lease.check()

        def shared(current: _Sequence | None) -> _Sequence:
            lease.check()
            if current is None:
                clock = self._clock_arg or lease.clock
                return self._new_sequence(lease.worker_id, clock, lease)
            if (
                current.layout != self.layout
                or current.waits != (self.on_clock_backwards is ClockBackwardsMode.WAIT)
                or current.max_backwards_ms != self.max_backwards_ms
                or (
                    self._clock_arg is not None
                    and _same_clock(self._clock_arg) is not _same_clock(current.clock)
                )
            ):
                raise InvalidSnowflakeError(
                    f"another Snowflake bound to this lease (worker id {lease.worker_id}) uses "
                    "another layout, clock or clock-backwards mode; generators sharing a "
                    "worker id share its sequence and must agree on them"
                )
            return current

        return lease.bind_minter(shared)

    def _use(
        self,
        sequence: _Sequence,
        mint: Callable[[], int] | None = None,
        redirect: _Redirect | None = None,
    ) -> None:
        if mint is None or redirect is None:
            redirect = [None]
            mint = sequence.minter(self._after_fork, redirect)
        self._sequence = sequence
        self._redirect = redirect
        self.worker_id = sequence.worker_id
        self._raw_mint = mint  # what _after_fork returns, inside the raw minter
        transform = self.transform
        self._mint = mint if transform is None else _transformed(mint, transform, self.layout)

    def __repr__(self) -> str:
        if self.worker_id is None:
            return "Snowflake(unbound)"
        return f"Snowflake(worker_id={self.worker_id})"

    if TYPE_CHECKING:

        def __call__(self) -> int:
            """Mint the next id (the column default)."""

    else:
        # ids() runs the minter's bound method with no Python frame of its own
        # in between (attrgetter is C): 15% more ids per second than a method.
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

        :param value: an id this generator minted (after its transform).

        Example::

            >>> s = Snowflake(worker_id=9)
            >>> s.decode(s()).worker_id
            9
        """
        untransformed = _untransformed(self.layout, value, self.transform, self._inverse)
        ticks, worker, sequence = self.layout.decompose(untransformed)
        return DecodedSnowflake(self.layout.instant_of(ticks), worker, sequence)

    # -- fork ------------------------------------------------------------------

    def _after_fork(self) -> int:
        # The first call in a forked child (or every call, if it must refuse),
        # and the call after a child's implicit lease was lost. The threads
        # that race here take turns; the first one rebinds the generator, the
        # others find it done.
        with _fork.process_lock(_bind_locks):
            sequence = self._sequence
            if sequence is not None and (
                sequence.token != _fork.process_token() or sequence.relinquished()
            ):
                self._rebind_in_child(sequence)
        # called inside the raw minter (its on_fork), whose result the transform takes:
        # the new binding's raw id, not a transformed one
        return self._raw_mint()

    def _rebind_in_child(self, sequence: _Sequence) -> None:
        if sequence.lease is None and sequence.token == _fork.process_token():
            # not a child: the fixed worker id was taken over (_fixed_sequence): take it back
            self._use(self._own_sequence(sequence.worker_id))
        elif self.lease is not None and self.after_fork is None:
            child = self.lease.in_this_process(sequence.clock)
            self.lease = child
            self._use(self._sequence_of(child))
        elif self.after_fork is not None:
            self.lease = None
            self._use(self._own_sequence(self._check_worker(self.after_fork())))
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
