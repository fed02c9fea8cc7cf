"""An int subclass is checked by its value, not by its own comparisons.

A proxy or wrapper type may compare loosely; the library reads the int it holds,
so a value out of range is refused as it would be as a plain int, and what is
kept is that plain int.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from sqlalchemy_seqkeys import (
    BitReversedSequence,
    InvalidBitReversalError,
    InvalidSequenceError,
    PooledSequence,
    SeqKeysError,
    reverse_bits,
)


class Loose(int):
    """Says yes to every range check."""

    def __ge__(self, other: object) -> bool:
        return True

    def __le__(self, other: object) -> bool:
        return True


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda: reverse_bits(Loose(-5)), SeqKeysError),
        (lambda: BitReversedSequence("s", batch_size=Loose(-5)), InvalidBitReversalError),
        (lambda: PooledSequence("p", start=Loose(-5)), InvalidSequenceError),
    ],
)
def test_a_loose_int_subclass_out_of_range_is_refused(
    make: Callable[[], object], error: type[SeqKeysError]
) -> None:
    with pytest.raises(error, match="-5"):
        make()


def test_an_int_subclass_in_range_is_kept_as_its_int() -> None:
    sequence = PooledSequence("p", batch_size=Loose(20))
    assert sequence.batch_size == 20
    assert type(sequence.batch_size) is int
