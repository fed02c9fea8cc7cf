"""Shard ids hashed from key columns, identical to Spanner's ``MOD(FARM_FINGERPRINT(...), N)``.

Spanner's schema guide avoids a hotspot on a monotonically increasing key by
prefixing it with a shard id computed from the row::

    ShardId INT64 NOT NULL AS (MOD(FARM_FINGERPRINT(CAST(LastAccess AS STRING)), 2048)) STORED

:func:`farm_fingerprint` is FarmHash Fingerprint64 as a signed 64-bit integer,
the value Spanner's ``FARM_FINGERPRINT`` returns, and :func:`shard_of` is
Spanner's ``MOD`` of it, which truncates toward zero (so shard ids of negative
fingerprints are negative)::

    >>> farm_fingerprint("a")
    -5528939962900187677
    >>> shard_of("a", 16)
    -13
    >>> shard_of("a", 16, non_negative=True)
    3

``non_negative=True`` gives Python's floor modulo instead, always
``0 .. shards - 1``; the matching Spanner expression is
``MOD(MOD(FARM_FINGERPRINT(x), N) + N, N)``.

FarmHash comes from the optional ``farmhash`` extra
(``pip install 'sqlalchemy-seqkeys[farmhash]'``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timedelta
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from .errors import InvalidShardError, MissingExtraError, NaiveDatetimeError

__all__ = ["ShardId", "farm_fingerprint", "shard_of", "spanner_string"]

_farmhash: Any = None


def _fingerprint64() -> Any:
    global _farmhash
    if _farmhash is None:
        try:
            import farmhash
        except ImportError:
            raise MissingExtraError(
                "farm_fingerprint() needs FarmHash: pip install 'sqlalchemy-seqkeys[farmhash]' "
                "(the pyfarmhash package)"
            ) from None
        _farmhash = farmhash.fingerprint64
    return _farmhash


def farm_fingerprint(value: str | bytes) -> int:
    """FarmHash Fingerprint64 of ``value`` as a signed 64-bit int, like Spanner's FARM_FINGERPRINT.

    Text is hashed as UTF-8, as Spanner hashes STRING values.

    Example::

        >>> farm_fingerprint("1footrue")
        -1541654101129638711
    """
    if isinstance(value, str):
        data: bytes = value.encode("utf-8")
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
    else:
        raise InvalidShardError(
            f"farm_fingerprint() hashes str or bytes, not {type(value).__name__}; "
            "build the string the way Spanner's CAST(... AS STRING) does first"
        )
    unsigned: int = _fingerprint64()(data)
    return unsigned - (1 << 64) if unsigned >= (1 << 63) else unsigned


def shard_of(value: str | bytes, shards: int, *, non_negative: bool = False) -> int:
    """Spanner's ``MOD(FARM_FINGERPRINT(value), shards)``: truncated toward zero.

    With ``non_negative=True``, ``0 .. shards - 1`` (Python's ``%``) instead.

    Example::

        >>> shard_of("alphabet", 2048)
        -107
    """
    if not isinstance(shards, int) or isinstance(shards, bool) or shards < 1:
        raise InvalidShardError(f"shards must be an int >= 1, not {shards!r}")
    fingerprint = farm_fingerprint(value)
    if non_negative:
        return fingerprint % shards
    remainder = abs(fingerprint) % shards
    return -remainder if fingerprint < 0 else remainder


#: The time zone of GoogleSQL's CAST(timestamp AS STRING) when none is given.
_SPANNER_DEFAULT_ZONE = ZoneInfo("America/Los_Angeles")


def _timestamp_text(value: datetime) -> str:
    if value.tzinfo is None or value.utcoffset() is None:
        raise NaiveDatetimeError(
            f"{value!r} has no timezone, and Spanner's TIMESTAMP is an instant; "
            "pass an aware datetime"
        )
    local = value.astimezone(_SPANNER_DEFAULT_ZONE)
    text = local.strftime("%Y-%m-%d %H:%M:%S")
    micro = local.microsecond
    if micro % 1000 == 0 and micro:
        text += f".{micro // 1000:03d}"
    elif micro:
        text += f".{micro:06d}"
    offset = local.utcoffset() or timedelta(0)
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    text += f"{sign}{minutes // 60:02d}"
    if minutes % 60:
        text += f":{minutes % 60:02d}"
    return text


def spanner_string(value: object) -> str:
    """The text Spanner's ``CAST(value AS STRING)`` gives, for INT64, STRING, BOOL, TIMESTAMP, DATE.

    TIMESTAMP values are written in Spanner's default time zone,
    America/Los_Angeles, with 0, 3 or 6 fractional digits and the hour offset,
    exactly as the cast does (``2024-01-01 19:04:05.678-08``). Any other type,
    a naive datetime, or None raises an error instead of guessing.

    Example::

        >>> spanner_string(True), spanner_string(-5), spanner_string(date(2024, 1, 2))
        ('true', '-5', '2024-01-02')
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value
    if isinstance(value, datetime):
        return _timestamp_text(value)
    if isinstance(value, date):
        return value.isoformat()
    if value is None:
        raise InvalidShardError(
            "cannot hash NULL: Spanner's CONCAT of a NULL is NULL, and so is the shard id; "
            "give the key columns values"
        )
    raise InvalidShardError(
        f"cannot hash a {type(value).__name__}; shard keys are INT64, STRING, BOOL, "
        "TIMESTAMP or DATE values, as in Spanner's CAST(... AS STRING)"
    )


class _HasParameters(Protocol):
    """What a column default receives: the execution context of the INSERT."""

    def get_current_parameters(self, isolate_multiinsert_groups: bool = True) -> dict[str, Any]: ...


class ShardId:
    """A column default: ``MOD(FARM_FINGERPRINT(CONCAT(CAST(col AS STRING), ...)), shards)``.

    ``columns`` are the names (keys) of the row's columns to hash, in order.
    Their values must be set by the application or by defaults of columns
    declared earlier in the table (SQLAlchemy computes defaults in column
    order). ``non_negative=True`` gives ``0 .. shards - 1``; see :func:`shard_of`.

    Example::

        shard: Mapped[int] = mapped_column(
            BigInteger, primary_key=True, default=ShardId("last_access", shards=2048)
        )
    """

    def __init__(self, *columns: str, shards: int, non_negative: bool = False) -> None:
        if not columns:
            raise InvalidShardError("ShardId needs at least one column to hash")
        if not isinstance(shards, int) or isinstance(shards, bool) or shards < 1:
            raise InvalidShardError(f"shards must be an int >= 1, not {shards!r}")
        self.columns: Sequence[str] = tuple(getattr(c, "key", c) for c in columns)
        self.shards = shards
        self.non_negative = non_negative

    def __repr__(self) -> str:
        names = ", ".join(repr(c) for c in self.columns)
        return f"ShardId({names}, shards={self.shards})"

    def of(self, *values: object) -> int:
        """The shard id of one row's key values, given in the column order.

        Example::

            >>> ShardId("n", "s", "b", shards=16).of(1, "foo", True)
            -7
        """
        text = "".join(spanner_string(v) for v in values)
        return shard_of(text, self.shards, non_negative=self.non_negative)

    def __call__(self, context: _HasParameters) -> int:
        params = context.get_current_parameters()
        try:
            values = [params[c] for c in self.columns]
        except KeyError as exc:
            raise InvalidShardError(
                f"ShardId hashes column {exc.args[0]!r}, which has no value in this INSERT; "
                "set it, or declare its default before the shard column"
            ) from None
        return self.of(*values)
