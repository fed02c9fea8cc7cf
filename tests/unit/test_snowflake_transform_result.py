"""A custom ``transform`` whose result is not an int id: refused with what it returned, never
handed out (a float transform gave 4,096 ids of 20 distinct values; ``str`` a raw TypeError)."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction

import pytest

from sqlalchemy_seqkeys import InvalidSnowflakeError, SeqKeysError, Snowflake


class _Id(int):
    """An int subclass (as a numbering library might return)."""

    def __int__(self) -> int:  # a subclass's own conversions are not what the id is
        return -1


@pytest.mark.parametrize(
    ("transform", "shown"),
    [
        (lambda v: v * 1.0, "float"),
        (str, "str"),
        (Decimal, "Decimal"),
        (lambda v: Fraction(v, 1), "Fraction"),
        (lambda v: None, "NoneType"),
        (lambda v: True, "bool"),
        (lambda v: (v,), "tuple"),
    ],
    ids=["float", "str", "Decimal", "Fraction", "None", "bool", "tuple"],
)
def test_a_transform_returning_no_int_is_refused(
    transform: Callable[[int], object], shown: str
) -> None:
    ids = Snowflake(worker_id=1, transform=transform)  # type: ignore[arg-type]
    for _ in range(3):  # every call, not only the first
        with pytest.raises(InvalidSnowflakeError) as info:
            ids()
        message = str(info.value)
        assert f"({shown})" in message, message
        assert "not an int" in message, message
        assert "was not handed out" in message, message
        assert "return an int" in message, message


def test_a_float_transform_never_hands_out_a_repeated_id() -> None:
    # the reviewer's case: 4,096 ids of one millisecond, 20 distinct floats
    ids = Snowflake(worker_id=1, transform=lambda v: v * 1.0)  # type: ignore[arg-type,return-value]
    with pytest.raises(InvalidSnowflakeError, match=r"returned .* \(float\)"):
        [ids() for _ in range(4096)]


def test_a_transform_returning_an_int_subclass_gives_a_plain_int() -> None:
    # an int subclass is an int: its value is the id (a plain int, as the column wants)
    ids = Snowflake(worker_id=1, transform=_Id)
    value = ids()
    assert value.__class__ is int
    assert ids.layout.decompose(value)[1] == 1  # the id itself, worker id 1
    assert ids() > value


def test_a_huge_repr_is_cut_short_and_still_a_seqkeys_error() -> None:
    ids = Snowflake(worker_id=1, transform=lambda v: "x" * 10_000)  # type: ignore[arg-type,return-value]
    with pytest.raises(SeqKeysError) as info:
        ids()
    assert len(str(info.value)) < 600


def test_an_int_transform_past_the_layout_still_says_so() -> None:
    ids = Snowflake(worker_id=1, transform=lambda v: -v)
    with pytest.raises(InvalidSnowflakeError, match=r"past the layout's largest id|within 0"):
        ids()
