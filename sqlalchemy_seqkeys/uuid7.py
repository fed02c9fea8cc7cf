"""UUIDv7 minted on the client, value for value as Python 3.14's ``uuid.uuid7()``.

:func:`new_uuid7` is the column default; :func:`uuid7_timestamp` reads a
value's millisecond back. The layout, the counter's rules (CPython's, but RFC
9562's for a clock that steps back: the timestamp holds, it does not run
ahead), thread and fork safety, and how these keys sort beside the server's
(:func:`~sqlalchemy_seqkeys.server_uuid7`) are on the doc page:
docs/strategies/comb-uuid7.md, section "UUIDv7".
"""

from __future__ import annotations

import os
import struct
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from itertools import repeat

from . import _fork
from .comb import MS_LIMIT, UNIX_EPOCH, guid_minters, uuids_from_ints
from .errors import InvalidGuidError, TimestampOutOfRangeError

__all__ = ["new_uuid7", "uuid7_timestamp"]

#: version 7 and variant 0b10, as CPython's _RFC_4122_VERSION_7_FLAGS
_VERSION_7_FLAGS = (7 << 76) | (0x8000 << 48)
_COUNTER_MAX = 0x3FF_FFFF_FFFF  # 42 bits
_SEED_MASK = 0x1FF_FFFF_FFFF  # 41 bits: a fresh counter has its top bit clear
_TAIL_MASK = 0xFFFF_FFFF
_LO_MASK = 0x3FFF_FFFF  # counter_lo: the counter's 30 low bits
_VERSION_VARIANT_MASK = (0xF << 76) | (0b11 << 62)

#: at most this many values under one hold of the lock (other threads mint in between)
_MANY_CHUNK = 1024

_object_new = object.__new__
_object_setattr = object.__setattr__
_SAFE_UNKNOWN = uuid.SafeUUID.unknown
_UUID = uuid.UUID
_from_bytes = int.from_bytes
_read_u32 = struct.Struct(">I").unpack_from  # no slice to allocate, unlike int.from_bytes


class _Uuid7Generator:
    """The state machine of CPython 3.14's ``uuid.uuid7()``, locked and fork-aware.

    ``clock_ns`` returns nanoseconds since the Unix epoch, ``randbytes(n)``
    returns ``n`` random bytes; both are injectable for tests. Random bytes are
    read ``block`` at a time and consumed in order, 10 per re-seed and 4 per
    further value, exactly as CPython calls ``os.urandom(10)`` and
    ``os.urandom(4)``: with the same byte stream, the same clock readings and
    the same starting state, :meth:`mint` returns CPython's values. The one
    difference: while the clock reads a millisecond earlier than the last
    value's, a value keeps that millisecond and counts on (RFC 9562 section
    6.2), where CPython's moves 1 ms further ahead for each value.

    Example::

        >>> g = _Uuid7Generator(clock_ns=lambda: 1_700_000_000_000_000_000,
        ...                     randbytes=lambda n: bytes(n))
        >>> str(g.mint())
        '018bcfe5-6800-7000-8000-000000000000'
        >>> str(g.mint())  # same millisecond: the counter goes up by 1
        '018bcfe5-6800-7000-8000-000100000000'
    """

    __slots__ = (
        "__weakref__",
        "_block",
        "_buffer",
        "_clock_ns",
        "_counter",
        "_last_ms",
        "_lock",
        "_pos",
        "_randbytes",
    )

    def __init__(
        self,
        *,
        clock_ns: Callable[[], int] = time.time_ns,
        randbytes: Callable[[int], bytes] = os.urandom,
        block: int = 4096,
    ) -> None:
        self._clock_ns = clock_ns
        self._randbytes = randbytes
        self._block = block
        self._lock = threading.Lock()
        self._last_ms = -1  # CPython's _last_timestamp_v7 (None before the first value)
        self._counter = 0  # CPython's _last_counter_v7
        self._buffer = b""
        self._pos = 0
        # the fork registry's at-fork hook (and its libc-fork check) resets it
        _fork.register(self)

    def mint(self) -> uuid.UUID:
        """The next value: larger than every value this generator minted before."""
        # Before the lock, which a libc-forked child may have inherited held.
        # Read through the module: tests swap the marker.
        if not _fork.marker_word[0]:
            _fork.forked()
        # The clock is read under the lock: a reading older than another
        # thread's value would look like a clock stepping back (and be held).
        with self._lock:
            value = self._step(self._clock_ns() // 1_000_000)
        u: uuid.UUID = _object_new(_UUID)
        _object_setattr(u, "int", value)
        _object_setattr(u, "is_safe", _SAFE_UNKNOWN)
        return u

    def mint_many(self, k: int) -> list[uuid.UUID]:
        """The values of ``k`` calls of :meth:`mint` at one clock reading (an executemany's rows).

        One fork check, and the lock once per ``_MANY_CHUNK`` values; other
        threads' values may fall between two chunks.
        """
        if not _fork.marker_word[0]:
            _fork.forked()
        values: list[int] = []
        step = self._step
        while len(values) < k:
            with self._lock:
                now_ms = self._clock_ns() // 1_000_000
                values += map(step, repeat(now_ms, min(k - len(values), _MANY_CHUNK)))
        return uuids_from_ints(values)

    def _step(self, ms: int) -> int:
        """One value for a clock reading (CPython's ``uuid7()`` unless behind); hold the lock."""
        last_ms = self._last_ms
        # A new millisecond, or a used-up counter, seeds the counter afresh;
        # else the counter goes up by one. A clock behind the last value keeps
        # its millisecond (RFC 9562 section 6.2; CPython moves 1 ms further
        # ahead for each value, python/cpython#138862). Only a used-up counter
        # (2**41 values at least, or a forked child's first value) moves the
        # timestamp past the latest clock reading, by 1 ms.
        if ms > last_ms:
            seed = True
        else:
            ms = last_ms
            c = self._counter + 1
            seed = c > _COUNTER_MAX
            if seed:
                ms += 1
        p = self._pos
        buffer = self._buffer
        if seed:
            if p + 10 > len(buffer):
                buffer = self._buffer = buffer[p:] + self._randbytes(self._block)
                p = 0
            r = _from_bytes(buffer[p : p + 10], "big")
            self._pos = p + 10
            c = (r >> 32) & _SEED_MASK
            tail = r & _TAIL_MASK
        else:
            if p + 4 > len(buffer):
                buffer = self._buffer = buffer[p:] + self._randbytes(self._block)
                p = 0
            tail = _read_u32(buffer, p)[0]
            self._pos = p + 4
        if ms >= MS_LIMIT:
            raise TimestampOutOfRangeError(
                f"the clock reads {ms} ms since 1970, past the 48-bit timestamp "
                "of a UUIDv7; check the system clock"
            )
        self._last_ms = ms
        self._counter = c
        return (ms << 80) | _VERSION_7_FLAGS | ((c >> 30) << 64) | ((c & _LO_MASK) << 32) | tail

    def _after_fork_in_child(self) -> None:
        # In a forked child, before any value: a new lock (the parent's may be
        # held by a thread that does not exist here), none of the parent's
        # random bytes, and an exhausted counter, so the child's next value
        # re-seeds in a later millisecond than all it inherited.
        self._lock = threading.Lock()
        self._buffer, self._pos = b"", 0
        self._counter = _COUNTER_MAX

    @property
    def state(self) -> tuple[int, int]:
        """``(last millisecond, last counter)``; -1 before the first value."""
        with self._lock:
            return self._last_ms, self._counter

    @state.setter
    def state(self, value: tuple[int, int]) -> None:
        with self._lock:
            self._last_ms, self._counter = value


default_generator = _Uuid7Generator()
_mint = default_generator.mint


def new_uuid7() -> uuid.UUID:
    """Mint an RFC 9562 version 7 UUID, laid out as Python 3.14's ``uuid.uuid7()``.

    48-bit Unix milliseconds, a 42-bit counter re-seeded each millisecond (top
    bit clear) and incremented within it, and 32 fresh random bits; values
    minted by one process strictly increase. A clock that steps back holds the
    timestamp at the last value's millisecond until it catches up (RFC 9562
    section 6.2). Thread-safe and fork-safe. Use it
    as a column default: ``mapped_column(CombGuid(), primary_key=True,
    default=new_uuid7)``. It takes no arguments.

    Example::

        >>> u = new_uuid7()
        >>> u.version, u.variant == uuid.RFC_4122
        (7, True)
        >>> new_uuid7() > u
        True
    """
    # A module function (not the bound method itself): it pickles and copies by
    # name, as a column default must, and stays the same object.
    return _mint()


guid_minters.add(new_uuid7)


def uuid7_timestamp(value: uuid.UUID) -> datetime:
    """The UTC instant (millisecond resolution) at the start of a version 7 UUID.

    It reads only the version and variant bits, so it cannot tell a COMB value
    whose random bits happen to read as version 7 (about 1 in 32 of the
    ``as_string`` layout) from a UUIDv7: know which kind a column holds.

    :param value: a version 7 ``uuid.UUID`` (:func:`new_uuid7`,
        :func:`~sqlalchemy_seqkeys.server_uuid7`, Python 3.14's ``uuid.uuid7()``).
    :raises InvalidGuidError: for anything but a version 7 ``uuid.UUID`` (COMB
        values have no version: use :func:`~sqlalchemy_seqkeys.comb_timestamp`).
    :raises TimestampOutOfRangeError: for a millisecond past the year 9999.

    Example::

        >>> uuid7_timestamp(uuid.UUID("018f3173-7000-7000-8000-000000000000"))
        datetime.datetime(2024, 5, 1, 0, 0, tzinfo=datetime.timezone.utc)
    """
    if not isinstance(value, uuid.UUID):
        raise InvalidGuidError(
            f"uuid7_timestamp() needs a uuid.UUID, not {type(value).__name__}; "
            "wrap text with uuid.UUID(text) or bytes with uuid.UUID(bytes=...)"
        )
    if value.int & _VERSION_VARIANT_MASK != _VERSION_7_FLAGS:
        raise InvalidGuidError(
            f"{value} is not a version 7 UUID (version {value.version}); "
            "for a COMB GUID use comb_timestamp(value, layout)"
        )
    ms = value.int >> 80
    try:
        return UNIX_EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        raise TimestampOutOfRangeError(
            f"{value} holds {ms} ms since 1970, past what datetime can show (year 9999); "
            "it was not minted by a clock of this era, so check where it came from"
        ) from None
