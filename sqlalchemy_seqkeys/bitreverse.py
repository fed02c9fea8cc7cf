"""Bit reversal: Spanner's ``bit_reversed_positive`` transformation, in Python.

Spanner's bit-reversed sequences keep an ordinary counter and hand out its 63
low bits in reverse order, sign bit 0: consecutive counters become values
that differ in their top bits, so new rows spread over the whole key space
instead of piling onto its end. :func:`reverse_bits` computes exactly the
values Spanner computes for the same counter, and is its own inverse::

    >>> reverse_bits(1)
    4611686018427387904
    >>> reverse_bits(reverse_bits(12345))
    12345
"""

from __future__ import annotations

from typing import Any, Protocol

import sqlalchemy as sa

from ._dialect import dialect_key
from .errors import InvalidBitReversalError

__all__ = ["BitReversed", "reverse_bits"]

_BITS = 63
_LIMIT = 1 << _BITS


def reverse_bits(n: int) -> int:
    """Reverse the 63 low bits of ``n`` (0 <= n < 2**63); the result's sign bit is 0.

    Equal to Spanner's ``bit_reversed_positive`` sequence value for counter
    ``n`` (checked on the emulator: counter 1 gives 2**62, counter 2 gives
    2**61), and its own inverse.

    Example::

        >>> reverse_bits(2)
        2305843009213693952
        >>> reverse_bits(1000)
        855683929200394240
    """
    if not isinstance(n, int) or isinstance(n, bool):
        raise InvalidBitReversalError(f"reverse_bits() takes an int, not {type(n).__name__}")
    if not 0 <= n < _LIMIT:
        raise InvalidBitReversalError(
            f"reverse_bits() takes 0 <= n < 2**63 (a positive BIGINT), not {n}"
        )
    return int(f"{n:063b}"[::-1], 2)


class _HasConnection(Protocol):
    """What a column default receives: the execution context of the INSERT."""

    @property
    def connection(self) -> sa.Connection: ...


#: Dialects whose sa.Sequence already hands out bit-reversed values:
#: sqlalchemy-spanner creates its sequences as bit_reversed_positive.
_NATIVELY_REVERSED = frozenset({"spanner"})


class BitReversed:
    """A column default: the values of ``source``, bit-reversed (Spanner-identical).

    ``source`` is a :class:`~sqlalchemy_seqkeys.TableSequence` (any mode) or an
    ``sqlalchemy.Sequence``. A Sequence on Spanner is created bit-reversed by
    sqlalchemy-spanner, so its values are used as they are there; on
    PostgreSQL and MariaDB the counter comes from the native sequence and is
    reversed here. SQLite has no sequences: use a TableSequence there.

    Example::

        counter = TableSequence("orders_counter", mode="async_batch")
        id: Mapped[int] = mapped_column(BigInteger, primary_key=True,
                                        default=BitReversed(counter))
    """

    def __init__(self, source: Any) -> None:
        if not isinstance(source, sa.Sequence) and not callable(source):
            raise InvalidBitReversalError(
                f"BitReversed wraps a TableSequence or an sqlalchemy.Sequence, not {source!r}"
            )
        self.source = source

    def __repr__(self) -> str:
        return f"BitReversed({self.source!r})"

    def __call__(self, context: _HasConnection) -> int:
        source = self.source
        if isinstance(source, sa.Sequence):
            conn = context.connection
            if not conn.dialect.supports_sequences:
                raise InvalidBitReversalError(
                    f"{conn.dialect.name} has no sequences; wrap a TableSequence instead: "
                    "BitReversed(TableSequence(name, mode=...))"
                )
            value = conn.scalar(sa.select(source.next_value()))
            if value is None:  # pragma: no cover - a sequence always answers
                raise InvalidBitReversalError(f"sequence {source.name!r} returned no value")
            counter = int(value)
            if dialect_key(conn.dialect) in _NATIVELY_REVERSED:
                return counter
            return reverse_bits(counter)
        return reverse_bits(int(source(context)))
