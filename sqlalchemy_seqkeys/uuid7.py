"""UUIDv7 minted on the client, in the layout of Python 3.14's ``uuid.uuid7()``.

A version 7 UUID (RFC 9562) starts with the Unix time in milliseconds, so keys
minted later sort later, in every engine's UUID or text storage::

    >>> from sqlalchemy_seqkeys import new_uuid7
    >>> from sqlalchemy_seqkeys.uuid7 import uuid7_timestamp
    >>> a, b = new_uuid7(), new_uuid7()
    >>> a < b, a.version
    (True, 7)
    >>> uuid7_timestamp(a).tzinfo
    datetime.timezone.utc

The bits are those of CPython 3.14's ``uuid.uuid7()``, so values minted by this
library, by ``uuid.uuid7()`` on Python 3.14 and by other ports of it cannot be
told apart and interleave the same way::

    --- 48 ---   -- 4 --   --- 12 ---   -- 2 --   --- 30 ---   - 32 -
    unix_ts_ms | version | counter_hi | variant | counter_lo | random

- ``counter`` (42 bits, RFC 9562 section 6.2 *Method 1*) is re-seeded from 41
  random bits (its top bit clear) on the first value of each millisecond and
  goes up by 1 for each further value in the same millisecond, so the values
  of one process strictly increase;
- ``random`` is 32 fresh random bits in every value;
- when the clock reads a millisecond *earlier* than the last value's, the
  value takes the last millisecond plus one and the counter goes on (CPython's
  rule, `python/cpython#138862`_: while the clock stays behind, each value
  moves the timestamp 1 ms further ahead of it);
- a counter that would pass 2**42 - 1 moves the timestamp 1 ms ahead and
  re-seeds (CPython's rule; it needs 2**41 values in one millisecond).

Unlike CPython's module globals, the state here is guarded by a lock, and the
clock is read under it (a reading older than another thread's value would
otherwise count as a clock stepping back and push timestamps ahead); random
bytes come from ``os.urandom`` in blocks (one system call per ~400 values);
a clock past the 48-bit field (year 10889) raises instead of wrapping; and a
forked child starts apart from its parent, after ``os.fork()`` and after a
libc ``fork()`` that runs no Python hook (the COMB generators' fork marker,
:mod:`sqlalchemy_seqkeys.comb`): the child drops the inherited random bytes
and moves to a later millisecond than anything it inherited.

**Client and server keys in one table.** PostgreSQL 18's ``uuidv7()`` (see
:func:`~sqlalchemy_seqkeys.uuidv7`) fills the 12 bits after the version with
the fraction of the millisecond (in 1/4096 ms, from a per-session clock that
never repeats), not with a counter. Both kinds share the 48-bit millisecond,
so keys of different milliseconds sort by time (as far as the app host's
clock and the database host's agree). Inside one millisecond they do not
follow insert order: a client key's 12 bits are the top of a random counter
(0..2047 on a fresh millisecond), a server key's are the instant within the
millisecond (0..4095), so a client key sorts among the server keys of its
millisecond as if minted at a random instant in that millisecond's first half.

.. _python/cpython#138862: https://github.com/python/cpython/issues/138862
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

from . import _fork
from .comb import _EPOCH, _MS_LIMIT, _guid_minters, _uuid_from_int
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


class _Uuid7Generator:
    """The state machine of CPython 3.14's ``uuid.uuid7()``, locked and fork-aware.

    ``clock_ns`` returns nanoseconds since the Unix epoch, ``randbytes(n)``
    returns ``n`` random bytes; both are injectable for tests. Random bytes are
    read ``block`` at a time and consumed in order, 10 per re-seed and 4 per
    further value, exactly as CPython calls ``os.urandom(10)`` and
    ``os.urandom(4)``: with the same byte stream, the same clock readings and
    the same starting state, :attr:`mint` returns CPython's values.

    Example::

        >>> g = _Uuid7Generator(clock_ns=lambda: 1_700_000_000_000_000_000,
        ...                     randbytes=lambda n: bytes(n))
        >>> str(g.mint())
        '018bcfe5-6800-7000-8000-000000000000'
        >>> str(g.mint())  # same millisecond: the counter goes up by 1
        '018bcfe5-6800-7000-8000-000100000000'
    """

    __slots__ = ("__weakref__", "_after_fork", "_get_state", "_set_state", "mint", "mint_many")

    mint: Callable[[], uuid.UUID]
    #: ``mint_many(k)``: the values of ``k`` calls of :attr:`mint` at one clock reading
    mint_many: Callable[[int], list[uuid.UUID]]

    def __init__(
        self,
        *,
        clock_ns: Callable[[], int] = time.time_ns,
        randbytes: Callable[[int], bytes] = os.urandom,
        block: int = 4096,
        name: str = "mint",
        doc: str | None = None,
    ) -> None:
        lock = threading.Lock()
        last_ms = -1  # CPython's _last_timestamp_v7 (None before the first value)
        counter = 0  # CPython's _last_counter_v7
        buffer = b""
        pos = 0
        uuid_class = uuid.UUID
        from_bytes = int.from_bytes
        fork_module = _fork

        def step(now_ms: int) -> int:
            # One value's step of CPython's uuid7(), for a clock reading taken
            # under the lock (a reading older than another thread's value would
            # look like a clock stepping back, which moves the timestamp ahead:
            # CPython's rule). The caller holds the lock.
            nonlocal last_ms, counter, buffer, pos
            ms = now_ms
            p = pos
            # A new millisecond, or a used-up counter, seeds the counter
            # afresh; else the counter goes up by one.
            seed = ms > last_ms
            if not seed:
                if ms < last_ms:
                    ms = last_ms + 1
                c = counter + 1
                seed = c > _COUNTER_MAX
                if seed:
                    ms += 1
            if seed:
                if p + 10 > len(buffer):
                    buffer, p = buffer[p:] + randbytes(block), 0
                r = from_bytes(buffer[p : p + 10], "big")
                pos = p + 10
                c = (r >> 32) & _SEED_MASK
                tail = r & _TAIL_MASK
            else:
                if p + 4 > len(buffer):
                    buffer, p = buffer[p:] + randbytes(block), 0
                tail = from_bytes(buffer[p : p + 4], "big")
                pos = p + 4
            if ms >= _MS_LIMIT:
                raise TimestampOutOfRangeError(
                    f"the clock reads {ms} ms since 1970, past the 48-bit timestamp "
                    "of a UUIDv7; check the system clock"
                )
            last_ms = ms
            counter = c
            return (ms << 80) | _VERSION_7_FLAGS | ((c >> 30) << 64) | ((c & _LO_MASK) << 32) | tail

        def mint() -> uuid.UUID:
            # Before the lock, which a libc-forked child may have inherited held.
            # Read through the module: tests swap the marker.
            if not fork_module._marker[0]:
                fork_module.forked()
            with lock:
                value = step(clock_ns() // 1_000_000)
            u: uuid.UUID = _object_new(uuid_class)
            _object_setattr(u, "int", value)
            _object_setattr(u, "is_safe", _SAFE_UNKNOWN)
            return u

        def mint_many(k: int) -> list[uuid.UUID]:
            # mint()'s steps k times over at one clock reading, for an
            # executemany's rows: one fork check, the lock once per _MANY_CHUNK.
            if not fork_module._marker[0]:
                fork_module.forked()
            values: list[int] = []
            while len(values) < k:
                with lock:
                    now_ms = clock_ns() // 1_000_000
                    values += [step(now_ms) for _ in range(min(k - len(values), _MANY_CHUNK))]
            return list(map(_uuid_from_int, values))

        def after_fork() -> None:
            # In a forked child, before any value: a new lock (the parent's may
            # be held by a thread that does not exist here), none of the
            # parent's random bytes, and an exhausted counter, so the child's
            # next value re-seeds in a later millisecond than all it inherited.
            nonlocal lock, buffer, pos, counter
            lock = threading.Lock()
            buffer, pos = b"", 0
            counter = _COUNTER_MAX

        def get_state() -> tuple[int, int]:
            with lock:
                return last_ms, counter

        def set_state(ms: int, value: int) -> None:
            nonlocal last_ms, counter
            with lock:
                last_ms, counter = ms, value

        mint.__name__ = mint.__qualname__ = name
        mint.__doc__ = doc
        # The fork hook finds generators through a WeakSet: whoever holds
        # only ``mint`` must keep the generator alive too.
        setattr(mint, "_generator", self)  # noqa: B010 - mypy types mint as a plain function
        self.mint = mint
        self.mint_many = mint_many
        self._after_fork = after_fork
        self._get_state = get_state
        self._set_state = set_state
        # the fork registry's at-fork hook (and its libc-fork check) resets it
        _fork.register(self)

    def __call__(self) -> uuid.UUID:
        return self.mint()

    def _after_fork_in_child(self) -> None:
        self._after_fork()

    @property
    def state(self) -> tuple[int, int]:
        """``(last millisecond, last counter)``; -1 before the first value."""
        return self._get_state()

    @state.setter
    def state(self, value: tuple[int, int]) -> None:
        self._set_state(*value)


_NEW_UUID7_DOC = """Mint an RFC 9562 version 7 UUID, laid out as Python 3.14's ``uuid.uuid7()``.

48-bit Unix milliseconds, a 42-bit counter re-seeded each millisecond (top
bit clear) and incremented within it, and 32 fresh random bits; values
minted by one process strictly increase. Thread-safe and fork-safe. Use it
as a column default: ``mapped_column(CombGuid(), primary_key=True,
default=new_uuid7)``.

Example::

    >>> u = new_uuid7()
    >>> u.version, u.variant == uuid.RFC_4122
    (7, True)
    >>> new_uuid7() > u
    True
"""

_default_generator = _Uuid7Generator(name="new_uuid7", doc=_NEW_UUID7_DOC)
new_uuid7: Callable[[], uuid.UUID] = _default_generator.mint
new_uuid7.__module__ = __name__
_guid_minters.add(new_uuid7)


def uuid7_timestamp(value: uuid.UUID) -> datetime:
    """The UTC instant (millisecond resolution) at the start of a version 7 UUID.

    Raises :class:`~sqlalchemy_seqkeys.InvalidGuidError` for anything but a
    version 7 ``uuid.UUID`` (COMB values have no version: use
    :func:`~sqlalchemy_seqkeys.comb_timestamp`). It reads only the version and
    variant bits, so it cannot tell a COMB value whose random bits happen to
    read as version 7 (about 1 in 32 of the ``as_string`` layout) from a UUIDv7:
    know which kind a column holds.

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
        return _EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        raise TimestampOutOfRangeError(
            f"{value} holds {ms} ms since 1970, past what datetime can show (year 9999); "
            "it was not minted by a clock of this era, so check where it came from"
        ) from None
