"""COMB GUIDs: 128-bit keys with the Unix millisecond where each engine compares first.

:func:`new_comb` mints one in a :class:`CombLayout`, :func:`comb_timestamp`
reads its millisecond back, and :func:`comb_minter` / :func:`comb_minter_many`
are what the ``new_comb_guid`` column default calls. Values of one process
strictly increase (a random step within a millisecond), threads share one
lock, and a forked child (``os.fork()`` or a libc ``fork()``) starts apart
from its parent. UUIDv7 lives in :mod:`sqlalchemy_seqkeys.uuid7`.

User guide: docs/strategies/comb-uuid7.md.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta, timezone
from itertools import repeat

from . import _fork
from ._enum import ChoiceEnum
from .errors import (
    InvalidGuidError,
    InvalidLayoutError,
    InvalidTimestampError,
    NaiveDatetimeError,
    TimestampOutOfRangeError,
)

__all__ = [
    "CombLayout",
    "comb_minter",
    "comb_minter_many",
    "comb_timestamp",
    "new_comb",
]

UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MS_BITS = 48
MS_LIMIT = 1 << _MS_BITS


class CombLayout(ChoiceEnum, error=InvalidLayoutError, noun="COMB layout"):
    """Where a COMB GUID keeps its timestamp; plain strings are accepted too.

    ``new_comb_guid`` picks the layout each dialect's ``ORDER BY`` follows; give
    one to :func:`new_comb` (or ``new_comb_guid.with_layout``) to choose it.

    Example: one instant (``0x018f31737000`` ms) in each layout::

        >>> from datetime import datetime, timezone
        >>> from sqlalchemy_seqkeys import new_comb, new_comb_guid
        >>> at = datetime(2024, 5, 1, tzinfo=timezone.utc)
        >>> str(new_comb(CombLayout.AS_STRING, at=at))[:13]
        '018f3173-7000'
        >>> new_comb(CombLayout.AS_BINARY, at=at).bytes_le[:6].hex()
        '018f31737000'
        >>> str(new_comb("at_end", at=at))[-12:]
        '018f31737000'
        >>> new_comb_guid.layout_for("mssql")
        <CombLayout.AT_END: 'at_end'>
    """

    #: Timestamp first in the text form and in RFC byte order (``UUID.bytes``).
    AS_STRING = "as_string"
    #: Timestamp first in Microsoft byte order (``UUID.bytes_le``).
    AS_BINARY = "as_binary"
    #: Timestamp in bytes 10-15, which SQL Server's ``uniqueidentifier`` compares first.
    AT_END = "at_end"


def bad_layout(layout: object) -> InvalidLayoutError:
    try:
        CombLayout.coerce(layout)  # type: ignore[arg-type]
    except InvalidLayoutError as exc:
        return exc
    return InvalidLayoutError(f"{layout!r} is not a COMB layout")  # pragma: no cover


def _encoder(layout: CombLayout | str) -> Callable[[int, int], uuid.UUID]:
    """The function that lays out ``(millisecond, counter)`` as ``layout`` says."""
    try:
        return _ENCODERS[layout]
    except (KeyError, TypeError):
        raise bad_layout(layout) from None


# -- fast UUID construction -------------------------------------------------

_object_new = object.__new__
_object_setattr = object.__setattr__
_SAFE_UNKNOWN = uuid.SafeUUID.unknown
_UUID = uuid.UUID


def _uuid_from_int(value: int) -> uuid.UUID:
    # uuid.UUID(int=...) validates and branches on five argument forms, which
    # costs more than minting the value; our ints are in range by construction.
    # (Python 3.14 adds uuid.UUID._from_int for exactly this.)
    u: uuid.UUID = _object_new(_UUID)
    _object_setattr(u, "int", value)
    _object_setattr(u, "is_safe", _SAFE_UNKNOWN)
    return u


def uuids_from_ints(values: Iterable[int]) -> list[uuid.UUID]:
    """:func:`_uuid_from_int` over many values, without a call per value."""
    out: list[uuid.UUID] = []
    append = out.append
    for value in values:
        u: uuid.UUID = _object_new(_UUID)
        _object_setattr(u, "int", value)
        _object_setattr(u, "is_safe", _SAFE_UNKNOWN)
        append(u)
    return out


# -- the monotonic (millisecond, counter) source ----------------------------


class _MonotonicSource:
    """Strictly increasing ``(millisecond, counter)`` pairs for one process.

    The counter has ``counter_bits`` bits. A new millisecond starts the counter
    at a random value below half its range; a repeated (or earlier: the clock
    may step back) millisecond adds a random step of 1 to 2**32 to it.

    Random numbers are read from ``randbytes`` (``os.urandom``) in blocks of
    ``_BLOCK`` draws, one system call per block instead of one per value. A
    forked child throws its copy of the block away (see ``_after_fork_in_child``),
    so parent and child never use the same bytes. A child is noticed on every
    draw, by the fork marker, whether it was forked by ``os.fork()`` (whose
    ``os.register_at_fork`` hook resets it at once) or by libc ``fork()``.
    """

    __slots__ = (
        "__weakref__",
        "_clock_ns",
        "_counter",
        "_draws",
        "_fresh_shift",
        "_lock",
        "_max",
        "_ms",
        "_nbytes",
        "_randbytes",
    )

    _BLOCK = 256
    #: at most this many pairs under one hold of the lock (other threads mint in between)
    _MANY_CHUNK = 1024

    def __init__(
        self,
        counter_bits: int,
        *,
        clock_ns: Callable[[], int] = time.time_ns,
        randbytes: Callable[[int], bytes] = os.urandom,
    ) -> None:
        self._max = (1 << counter_bits) - 1
        self._nbytes = (counter_bits + 7) // 8
        # a fresh counter keeps its top bit clear: 2**(bits-1) of room for steps
        self._fresh_shift = self._nbytes * 8 - counter_bits + 1
        self._clock_ns = clock_ns
        self._randbytes = randbytes
        self._lock = threading.Lock()
        self._ms = -1
        self._counter = 0
        self._draws: Iterator[int] = iter(())
        _fork.register(self)

    def next(self) -> tuple[int, int]:
        """Return the next pair; the pair is larger than every earlier one."""
        if not _fork.marker_word[0]:  # inline: the common case is one word read
            _fork.forked()
        now_ms = self._clock_ns() // 1_000_000
        with self._lock:
            return self._step(now_ms)

    def next_many(self, k: int) -> list[tuple[int, int]]:
        """The next ``k`` pairs: what ``k`` calls of :meth:`next` at one clock reading give.

        One fork check, one clock reading and one lock for every
        ``_MANY_CHUNK`` pairs, instead of one of each per pair: an executemany's
        keys, taken at its first row. Other threads' pairs may fall between two
        chunks; every pair is still larger than every earlier one.
        """
        if not _fork.marker_word[0]:
            _fork.forked()
        now_ms = self._clock_ns() // 1_000_000
        step = self._step
        out: list[tuple[int, int]] = []
        while len(out) < k:
            with self._lock:
                out += map(step, repeat(now_ms, min(k - len(out), self._MANY_CHUNK)))
        return out

    def _step(self, now_ms: int) -> tuple[int, int]:
        """The pair for a clock reading (the one place the state moves); hold the lock."""
        r = next(self._draws, None)
        if r is None:
            r = self._refill()
        ms = self._ms
        if now_ms > ms:
            self._ms = ms = now_ms
            counter = r >> self._fresh_shift
        else:  # the same millisecond, or the clock stepped back: hold the latest one
            counter = self._counter + 1 + (r & 0xFFFFFFFF)
            if counter > self._max:
                # this millisecond ran out of room: borrow the next one
                self._ms = ms = ms + 1
                counter = r >> self._fresh_shift
        self._counter = counter
        if ms >= MS_LIMIT:
            raise TimestampOutOfRangeError(
                f"the clock reads {ms} ms since 1970, past the 48-bit timestamp field; "
                "check the system clock"
            )
        return ms, counter

    def _refill(self) -> int:
        """Read a new block of random numbers; return its first (the caller holds the lock)."""
        n = self._nbytes
        block = self._randbytes(n * self._BLOCK)
        from_bytes = int.from_bytes
        draws = iter([from_bytes(block[i : i + n], "big") for i in range(0, len(block), n)])
        self._draws = draws
        return next(draws)

    def _after_fork_in_child(self) -> None:
        # The lock may have been held by a thread that does not exist here.
        self._lock = threading.Lock()
        # Never reuse the parent's buffered random numbers.
        self._draws = iter(())
        # Exhaust the current millisecond: the child's next value takes a fresh
        # random counter in a later millisecond, so it stays above everything
        # the child inherited and shares no counter walk with the parent.
        self._counter = self._max


# -- layouts -----------------------------------------------------------------

_COUNTER_BITS = 80


def _encode_as_string(ms: int, counter: int) -> uuid.UUID:
    return _uuid_from_int((ms << 80) | counter)


_LOW64 = (1 << 64) - 1


def _encode_as_binary(ms: int, counter: int) -> uuid.UUID:
    # Wanted: UUID.bytes_le == ms (6 bytes) + counter (10 bytes), both big-endian.
    # bytes_le swaps the first three fields of UUID.bytes, so UUID.bytes is
    # ms[3] ms[2] ms[1] ms[0] | ms[5] ms[4] | c[1] c[0] | c[2] .. c[9].
    m = ms.to_bytes(6, "little")  # ms[5] .. ms[0]
    head = int.from_bytes(m[2:6] + m[0:2], "big")
    c01 = int.from_bytes((counter >> 64).to_bytes(2, "little"), "big")
    return _uuid_from_int((head << 80) | (c01 << 64) | (counter & _LOW64))


def _encode_at_end(ms: int, counter: int) -> uuid.UUID:
    # SQL Server compares uniqueidentifier bytes (in bytes_le order) as
    # 10-15, 8-9, 6-7, 4-5, 0-3. Put the millisecond in 10-15 and the counter,
    # most significant byte first, through the rest of that order; in
    # UUID.bytes that is c[9] c[8] c[7] c[6] | c[5] c[4] | c[3] c[2] | c[0] c[1] | ms.
    low = int.from_bytes((counter & _LOW64).to_bytes(8, "little"), "big")
    return _uuid_from_int((low << 64) | ((counter >> 64) << 48) | ms)


_ENCODERS: dict[str, Callable[[int, int], uuid.UUID]] = {
    CombLayout.AS_STRING: _encode_as_string,
    CombLayout.AS_BINARY: _encode_as_binary,
    CombLayout.AT_END: _encode_at_end,
}


def _timestamp_ms_as_string(value: uuid.UUID) -> int:
    return value.int >> 80


def _timestamp_ms_as_binary(value: uuid.UUID) -> int:
    return int.from_bytes(value.bytes_le[:6], "big")


def _timestamp_ms_at_end(value: uuid.UUID) -> int:
    return value.int & (MS_LIMIT - 1)


_DECODERS: dict[str, Callable[[uuid.UUID], int]] = {
    CombLayout.AS_STRING: _timestamp_ms_as_string,
    CombLayout.AS_BINARY: _timestamp_ms_as_binary,
    CombLayout.AT_END: _timestamp_ms_at_end,
}


def _to_unix_ms(at: datetime | int) -> int:
    if isinstance(at, datetime):
        if at.tzinfo is None or at.utcoffset() is None:
            raise NaiveDatetimeError(
                f"{at!r} has no timezone, so it names no single instant; "
                "pass an aware datetime such as datetime(..., tzinfo=timezone.utc)"
            )
        ms = (at - UNIX_EPOCH) // timedelta(milliseconds=1)
    elif isinstance(at, int) and not isinstance(at, bool):
        ms = at
    else:
        raise InvalidTimestampError(
            f"at must be an aware datetime or Unix milliseconds as an int, not {type(at).__name__}"
        )
    if not 0 <= ms < MS_LIMIT:
        raise TimestampOutOfRangeError(
            f"{at!r} is outside the 48-bit millisecond range of a COMB timestamp "
            "(1970-01-01T00:00:00Z up to 2**48 - 1 ms later, in the year 10889)"
        )
    return ms


_comb_source = _MonotonicSource(_COUNTER_BITS)
#: the zero-argument GUID minters, so that a column check can recognise them
guid_minters: weakref.WeakSet[Callable[[], uuid.UUID]] = weakref.WeakSet()


def comb_minter(layout: CombLayout | str) -> Callable[[], uuid.UUID]:
    """A zero-argument function that mints COMB GUIDs of ``layout`` (a column default).

    The same values as ``new_comb(layout)``, without looking the layout up on
    every call.

    :param layout: where the timestamp goes: a :class:`CombLayout` or its value
        (``"as_string"``, ``"as_binary"``, ``"at_end"``).
    :raises InvalidLayoutError: for anything else.

    Example::

        >>> mint = comb_minter("as_string")
        >>> mint() < mint()
        True
    """
    encode = _encoder(layout)
    source_next = _comb_source.next
    if encode is not _encode_as_string:

        def mint() -> uuid.UUID:
            return encode(*source_next())

        guid_minters.add(mint)
        return mint

    # The default layout on most engines, inlined: this runs once per row.
    def mint_as_string() -> uuid.UUID:
        ms, counter = source_next()
        u: uuid.UUID = _object_new(_UUID)
        _object_setattr(u, "int", (ms << 80) | counter)
        _object_setattr(u, "is_safe", _SAFE_UNKNOWN)
        return u

    guid_minters.add(mint_as_string)
    return mint_as_string


def comb_minter_many(layout: CombLayout | str) -> Callable[[int], list[uuid.UUID]]:
    """A function of ``k`` that mints the next ``k`` COMB GUIDs of ``layout`` at once.

    The values ``k`` calls of :func:`comb_minter`'s function would give in one
    instant, for a fraction of the time: what a column default uses for an
    executemany's rows.

    :param layout: a :class:`CombLayout` or its value, as for :func:`comb_minter`.
    :raises InvalidLayoutError: for anything else.

    Example::

        >>> mint_many = comb_minter_many("as_string")
        >>> values = mint_many(3)
        >>> values == sorted(values) and len(set(values)) == 3
        True
    """
    encode = _encoder(layout)
    source_many = _comb_source.next_many
    if encode is _encode_as_string:  # the default layout on most engines: one call a value

        def mint_many(k: int) -> list[uuid.UUID]:
            return uuids_from_ints([(ms << 80) | c for ms, c in source_many(k)])

    else:

        def mint_many(k: int) -> list[uuid.UUID]:
            return [encode(ms, c) for ms, c in source_many(k)]

    return mint_many


def new_comb(layout: CombLayout | str, *, at: datetime | int | None = None) -> uuid.UUID:
    """Mint a COMB GUID with its timestamp where ``layout`` says.

    :param layout: where the timestamp goes: a :class:`CombLayout` or its value
        (``"as_string"``, ``"as_binary"``, ``"at_end"``).
    :param at: ``None`` (the default) for the current time, in this process's
        order; or an aware datetime, or Unix milliseconds as an int, for a value
        of that instant with a fully random tail (backfills, test data).
    :raises InvalidLayoutError: for an unknown layout.
    :raises NaiveDatetimeError: for a datetime without a timezone.
    :raises TimestampOutOfRangeError: for an instant outside the 48-bit
        millisecond range (1970 to the year 10889).

    Example::

        >>> from datetime import datetime, timezone
        >>> v = new_comb("as_string", at=datetime(2024, 5, 1, tzinfo=timezone.utc))
        >>> str(v)[:13]
        '018f3173-7000'
    """
    encode = _encoder(layout)
    if at is None:
        return encode(*_comb_source.next())
    return encode(_to_unix_ms(at), int.from_bytes(os.urandom(10), "big"))


def comb_timestamp(value: uuid.UUID, layout: CombLayout | str) -> datetime:
    """Return the UTC instant stored in a COMB GUID of the given ``layout``.

    :param value: the ``uuid.UUID`` (wrap text with ``uuid.UUID(text)``).
    :param layout: the :class:`CombLayout` it was minted with, or its value.
    :raises InvalidGuidError: when ``value`` is not a ``uuid.UUID``.
    :raises InvalidLayoutError: for an unknown layout.

    Example::

        >>> from datetime import datetime, timezone
        >>> t = datetime(2024, 5, 1, 12, 30, tzinfo=timezone.utc)
        >>> comb_timestamp(new_comb("at_end", at=t), "at_end") == t
        True
    """
    if not isinstance(value, uuid.UUID):
        raise InvalidGuidError(
            f"comb_timestamp() needs a uuid.UUID, not {type(value).__name__}; "
            "wrap text with uuid.UUID(text) or bytes with uuid.UUID(bytes=...)"
        )
    try:
        ms = _DECODERS[layout](value)
    except (KeyError, TypeError):
        raise bad_layout(layout) from None
    try:
        return UNIX_EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        raise TimestampOutOfRangeError(
            f"{value} holds {ms} ms since 1970, past what datetime can show (year 9999); "
            f"it was probably not minted with layout {CombLayout.coerce(layout).value!r}"
        ) from None
