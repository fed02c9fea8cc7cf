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

from typing import Any

from .errors import InvalidShardError, MissingExtraError

__all__ = ["farm_fingerprint", "shard_of"]

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
