"""Time ranges over keys: the key bounds of the rows minted in ``[start, end)``.

Time-ordered keys (UUIDv7, COMB GUIDs, snowflake ids) carry the time they were
minted, so a time window is a key range that an index range scan on the primary
key finds, without a ``created_at`` column. What "exactly" means, and on which
column types and engines a range exists: the "Time ranges over keys" reference
page (docs/reference/time-ranges.md); a worked example: docs/strategies/comb-uuid7.md.
"""

from __future__ import annotations

import functools
import operator
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

from .comb import CombLayout, bad_layout
from .errors import (
    InvalidSnowflakeError,
    InvalidTimeRangeError,
    NaiveDatetimeError,
    TimestampOutOfRangeError,
)
from .layout import since_unix_epoch
from .snowflake import MAX_INT64, Snowflake, SnowflakeLayout, rotate_digits, unrotate_digits

__all__ = ["comb_bounds", "snowflake_bounds", "uuid7_bounds"]

_MS = timedelta(milliseconds=1)
_MAX_UINT64 = 2**64 - 1  # the largest id of an unsigned layout's column
_UNIX = timedelta(0)  # the Unix epoch, 1970-01-01T00:00Z, as a time since itself


def _instant(value: object, name: str) -> datetime:
    if not isinstance(value, datetime):
        raise InvalidTimeRangeError(
            f"{name} must be an aware datetime, not {type(value).__name__} {value!r}"
        )
    if value.tzinfo is None or value.utcoffset() is None:
        raise NaiveDatetimeError(
            f"{name} {value!r} has no timezone, so it names no single instant; "
            "pass an aware datetime such as datetime(..., tzinfo=timezone.utc)"
        )
    return value


def _window(start: object, end: object) -> tuple[timedelta, timedelta]:
    """``start`` and ``end`` as instants: how long after 1970-01-01T00:00Z each is.

    Instants, not wall clocks: two datetimes that share a tzinfo object compare by
    wall clock, so 02:30 CEST would come after 02:10 CET, 40 minutes later.
    """
    s, e = _instant(start, "start"), _instant(end, "end")
    since_s, since_e = since_unix_epoch(s), since_unix_epoch(e)
    if since_e < since_s:
        raise InvalidTimeRangeError(
            f"end {e.isoformat()} is before start {s.isoformat()}; the window is "
            "[start, end): pass the earlier instant first"
        )
    return since_s, since_e


def _ceil_units(instant: timedelta, epoch: timedelta, unit: timedelta) -> int:
    """Whole units from ``epoch`` to ``instant`` (both as times since 1970 UTC), rounded up;
    never below 0."""
    # A key's timestamp is a whole unit; t >= x and t < x both hold for the
    # same keys as t >= ceil(x) and t < ceil(x).
    return max(0, -((epoch - instant) // unit))


def _ms_window(start: object, end: object) -> tuple[int, int]:
    s, e = _window(start, end)
    # datetime stops at 9999-12-31, far inside the 48-bit millisecond range
    return _ceil_units(s, _UNIX, _MS), _ceil_units(e, _UNIX, _MS)


def uuid7_bounds(start: datetime, end: datetime) -> tuple[uuid.UUID, uuid.UUID]:
    """``(lo, hi)``: ``lo <= id < hi`` holds for exactly the v7 keys minted in ``[start, end)``.

    For keys from :func:`~sqlalchemy_seqkeys.new_uuid7`, PostgreSQL 18's
    ``uuidv7()``, MariaDB's ``UUID_v7()`` or Python 3.14's ``uuid.uuid7()``,
    in any ``CombGuid()`` column (not SQL Server's ``uniqueidentifier``).
    Select with ``id >= lo AND id < hi``; ``start == end`` gives ``lo == hi``,
    an empty range.

    Example::

        >>> from datetime import datetime, timezone
        >>> t = datetime(2025, 1, 1, tzinfo=timezone.utc)
        >>> lo, hi = uuid7_bounds(t, t + timedelta(microseconds=2500))  # up to 2.5 ms
        >>> str(lo), str(hi)  # keys of 00:00:00.000, .001 and .002
        ('01941f29-7c00-0000-0000-000000000000', '01941f29-7c03-0000-0000-000000000000')

    :param start: the first instant of the window (included), an aware
      ``datetime`` in any time zone (its instant counts, not its wall clock,
      through daylight-saving changes and ``fold`` too); it rounds up to the
      next whole millisecond, as keys carry
      whole milliseconds ("Time ranges over keys" page), and an instant before
      1970 acts as 1970. A naive ``datetime`` raises
      :class:`~sqlalchemy_seqkeys.NaiveDatetimeError`, anything else
      :class:`~sqlalchemy_seqkeys.InvalidTimeRangeError`.
    :param end: the instant the window stops at (excluded), an aware
      ``datetime`` rounded as ``start`` is; before ``start`` raises
      :class:`~sqlalchemy_seqkeys.InvalidTimeRangeError`.
    """
    lo_ms, hi_ms = _ms_window(start, end)
    return uuid.UUID(int=lo_ms << 80), uuid.UUID(int=hi_ms << 80)


def _bound_as_string(ms: int) -> uuid.UUID:
    return uuid.UUID(int=ms << 80)


def _bound_as_binary(ms: int) -> uuid.UUID:
    return uuid.UUID(bytes_le=ms.to_bytes(6, "big") + bytes(10))


def _bound_at_end(ms: int) -> uuid.UUID:
    # SQL Server compares bytes 10-15 first: the millisecond, then the rest at 0
    return uuid.UUID(int=ms)


_COMB_BOUNDS: dict[str, Callable[[int], uuid.UUID]] = {
    CombLayout.AS_STRING: _bound_as_string,
    CombLayout.AS_BINARY: _bound_as_binary,
    CombLayout.AT_END: _bound_at_end,
}


def comb_bounds(
    start: datetime, end: datetime, layout: CombLayout | str
) -> tuple[uuid.UUID, uuid.UUID]:
    """``(lo, hi)`` for COMB GUIDs of ``layout`` minted in ``[start, end)``, in that layout's order.

    Example::

        >>> from datetime import datetime, timezone
        >>> t = datetime(2025, 1, 1, tzinfo=timezone.utc)
        >>> lo, hi = comb_bounds(t, t + timedelta(hours=1), "at_end")
        >>> str(lo)
        '00000000-0000-0000-0000-01941f297c00'

    :param start: the first instant of the window (included), an aware
      ``datetime``, rounded up to the next whole millisecond as in
      :func:`uuid7_bounds`; before 1970 acts as 1970.
    :param end: the instant the window stops at (excluded), an aware
      ``datetime`` not before ``start``, rounded the same way.
    :param layout: the :class:`~sqlalchemy_seqkeys.CombLayout` the keys were
      minted with, or its value as a string; the bounds follow its order:

      - ``AS_STRING`` (``"as_string"``): UUID order, which every
        ``CombGuid()`` column except SQL Server's follows (the same bounds as
        :func:`uuid7_bounds`);
      - ``AT_END`` (``"at_end"``): SQL Server ``uniqueidentifier`` order only;
      - ``AS_BINARY`` (``"as_binary"``): byte order of ``UUID.bytes_le``:
        compare a binary column holding ``bytes_le`` with ``lo.bytes_le`` and
        ``hi.bytes_le``.

      Any other value raises :class:`~sqlalchemy_seqkeys.InvalidLayoutError`.
    """
    try:
        bound = _COMB_BOUNDS[layout]
    except (KeyError, TypeError):
        raise bad_layout(layout) from None
    lo_ms, hi_ms = _ms_window(start, end)
    return bound(lo_ms), bound(hi_ms)


def _keeps_order(transform: Callable[[int], int]) -> bool:
    """Whether ``transform`` is known to be strictly increasing: it adds an int to an id
    (``functools.partial(int.__add__, n)``, ``functools.partial(operator.add, n)`` or
    ``n.__add__``). No other function can be told to keep order by looking at it."""
    if isinstance(transform, functools.partial):
        return (
            transform.func in (int.__add__, operator.add)
            and len(transform.args) == 1
            and not transform.keywords
            and type(transform.args[0]) is int
        )
    offset = getattr(transform, "__self__", None)
    return type(offset) is int and transform == offset.__add__


def _name_of(transform: Callable[[int], int]) -> str:
    # a name for messages, never a repr (a partial's arguments may be secrets)
    if isinstance(transform, functools.partial):
        return f"functools.partial({_name_of(transform.func)}, ...)"
    name = getattr(transform, "__qualname__", None)
    return name if isinstance(name, str) else type(transform).__name__


def _order_breaking(transform: Callable[[int], int]) -> str:
    """Why no id range holds a time window under ``transform``, which is not known to keep
    order: the library's own transforms with their own reasons, any other in general."""
    from .bitreverse import reverse_bits
    from .opaque import OpaqueBigint

    reasons: dict[object, str] = {
        rotate_digits: (
            "rotate_digits moves an id's last digits (its sequence) to the front, "
            "so ids of one time window are scattered over the whole key range"
        ),
        unrotate_digits: "unrotate_digits reorders an id's digits, which scatters time order",
        reverse_bits: (
            "reverse_bits puts an id's low bits first, so consecutive ids land far "
            "apart in the key range"
        ),
    }
    fn: object = transform.func if isinstance(transform, functools.partial) else transform
    if isinstance(getattr(fn, "__self__", None), OpaqueBigint):
        return (
            f"{_name_of(transform)} is a keyed permutation: it scatters the ids of a time "
            "window over the whole key range, and the two bounds it maps, even in order, "
            "hold a few of them at most"
        )
    return reasons.get(fn) or (
        f"{_name_of(transform)} is not known to keep order (to be strictly increasing), and "
        "a transform that does not keep order, such as a keyed permutation or a digit "
        "rotation, scatters the ids of a time window over the key range, even where the "
        "two bounds it maps come out in order"
    )


def _layout_and_transform(
    layout: SnowflakeLayout | Snowflake | None, transform: Callable[[int], int] | None
) -> tuple[SnowflakeLayout, Callable[[int], int] | None]:
    """:func:`snowflake_bounds`'s ``layout`` and ``transform``, checked: a transform
    not known to keep order is refused before it is called."""
    if isinstance(layout, Snowflake):
        if transform is not None:
            raise InvalidSnowflakeError(
                "pass transform= only with a SnowflakeLayout; a Snowflake brings its own"
            )
        transform = layout.transform
        layout = layout.layout
    elif layout is None:
        layout = SnowflakeLayout()
    elif not isinstance(layout, SnowflakeLayout):
        raise InvalidSnowflakeError(
            f"layout must be a SnowflakeLayout or a Snowflake, not {type(layout).__name__}"
        )
    if transform is not None:
        if not callable(transform):
            raise InvalidSnowflakeError(f"transform must be callable, not {transform!r}")
        if not _keeps_order(transform):
            raise InvalidSnowflakeError(
                "no id range holds the ids of a time window under this transform: "
                f"{_order_breaking(transform)}. Key the table by the untransformed id and "
                "transform it only where it leaves the application (OpaqueBigint.encode "
                "at an API): snowflake_bounds(start, end, layout) then selects its rows; "
                "otherwise select on a timestamp column, or filter on the timestamp decoded "
                "from the untransformed id (layout.decode(id).timestamp). A transform you "
                "know to be strictly increasing you can apply to the bounds yourself: "
                "map(f, snowflake_bounds(start, end, layout))"
            )
    return layout, transform


def snowflake_bounds(
    start: datetime,
    end: datetime,
    layout: SnowflakeLayout | Snowflake | None = None,
    *,
    transform: Callable[[int], int] | None = None,
) -> tuple[int, int]:
    """``(lo, hi)``: ``lo <= id < hi`` for exactly the snowflake ids minted in ``[start, end)``.

    Example::

        >>> from datetime import datetime, timezone
        >>> t = datetime(2025, 1, 1, tzinfo=timezone.utc)
        >>> lo, hi = snowflake_bounds(t, t + timedelta(milliseconds=1))
        >>> hi - lo == 1 << 22  # one millisecond: every worker id and sequence
        True

    :param start: the first instant of the window (included), an aware
      ``datetime`` in any time zone, as in :func:`uuid7_bounds` (the layout's
      ``epoch`` too); it rounds up to the next whole tick of the layout
      (``time_unit``), and an instant before the layout's ``epoch`` acts as the
      epoch. Where the layout fills its column (all 63 bits of a signed
      ``BIGINT``, or all 64 bits with ``unsigned=True``), an instant past the
      start of its last tick has no bound there and raises
      :class:`~sqlalchemy_seqkeys.TimestampOutOfRangeError`; the bounds of an
      unsigned layout go up to ``2**64 - 1``.
    :param end: the instant the window stops at (excluded), an aware
      ``datetime`` not before ``start``, rounded and limited as ``start`` is.
    :param layout: the :class:`~sqlalchemy_seqkeys.SnowflakeLayout` the ids
      were minted with; ``None`` (the default) is ``SnowflakeLayout()``, the
      classic 41/10/12-bit layout in milliseconds since Twitter's epoch. A
      :class:`~sqlalchemy_seqkeys.Snowflake` stands for its own layout and
      ``transform`` (then pass no ``transform=``).
    :param transform: the function the ids went through after minting, applied
      to both bounds; ``None`` (the default): none. Only a transform known to
      keep order is taken: adding an int, as
      ``functools.partial(int.__add__, n)``, ``functools.partial(operator.add, n)``
      or ``n.__add__``. Any other raises
      :class:`~sqlalchemy_seqkeys.InvalidSnowflakeError` before it is called:
      :func:`~sqlalchemy_seqkeys.rotate_digits`,
      :func:`~sqlalchemy_seqkeys.reverse_bits` and a keyed permutation such as
      :meth:`OpaqueBigint.encode` scatter a window over the key range (the
      bounds they map hold a few of its ids at most, even in order), and
      nothing tells that a function of your own keeps order. Key the table by
      the untransformed id, or apply a transform you know to be strictly
      increasing to the bounds yourself:
      ``map(f, snowflake_bounds(start, end, layout))``.
    """
    layout, transform = _layout_and_transform(layout, transform)
    s, e = _window(start, end)
    shift = layout.worker_bits + layout.sequence_bits
    # the first tick past the timestamp field; its ids would pass the column's
    # largest value when the layout fills it (63 bits of a BIGINT, or 64 of an
    # unsigned column), so a bound there has no value in the column
    past_end = 1 << layout.timestamp_bits
    if layout.unsigned:
        highest = _MAX_UINT64 >> shift
        column = "64-bit unsigned (NUMERIC(20, 0), BIGINT UNSIGNED)"
    else:
        highest = MAX_INT64 >> shift
        column = "signed BIGINT"
    epoch = since_unix_epoch(layout.epoch)
    bounds = []
    for name, instant, since in (("start", start, s), ("end", end, e)):
        ticks = min(_ceil_units(since, epoch, layout.time_unit), past_end)
        if ticks > highest:
            raise TimestampOutOfRangeError(
                f"{name} {instant.isoformat()} falls in or after the layout's last tick "
                f"({layout.instant_of(highest).isoformat()}), past which no bound fits "
                f"its {column} column; use an earlier {name}, or select with id >= lo alone"
            )
        bounds.append(ticks << shift)
    lo, hi = bounds
    if transform is None:
        return lo, hi
    return transform(lo), transform(hi)  # an offset: in order
