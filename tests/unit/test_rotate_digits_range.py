"""rotate_digits / unrotate_digits of an int past every id's range: InvalidSnowflakeError
saying so (10**5000 raised Python's raw ValueError of its int-to-str digit limit)."""

from __future__ import annotations

import sys

import pytest

from sqlalchemy_seqkeys import InvalidSnowflakeError, rotate_digits, unrotate_digits

#: past Python's int-to-str limit (4,300 digits by default), and far past it
HUGE = [10**5000, 2**100_000 - 1, 2**64, 10**20]


@pytest.mark.parametrize("fn", [rotate_digits, unrotate_digits])
@pytest.mark.parametrize("value", HUGE, ids=["10**5000", "2**100000-1", "2**64", "10**20"])
def test_a_value_past_every_id_is_refused_as_out_of_range(fn: object, value: int) -> None:
    with pytest.raises(InvalidSnowflakeError) as info:
        fn(value)  # type: ignore[operator]
    message = str(info.value)
    assert "18446744073709551615" in message, message
    assert "snowflake id" in message, message
    assert len(message) < 400, message  # the value cut short, never its 5,000 digits


def test_the_largest_unsigned_id_still_reaches_the_bigint_check() -> None:
    # 20 digits, within an unsigned layout: refused as before, for the BIGINT
    with pytest.raises(InvalidSnowflakeError, match=r"past 2\*\*63 - 1"):
        rotate_digits(2**64 - 1)


def test_the_int_to_str_limit_is_left_as_it_was() -> None:
    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else None
    with pytest.raises(InvalidSnowflakeError):
        rotate_digits(10**5000)
    if limit is not None:
        assert sys.get_int_max_str_digits() == limit
    assert rotate_digits(561632371724517376) == 566163237172451737


@pytest.mark.parametrize("fn", [rotate_digits, unrotate_digits])
def test_a_huge_digits_argument_is_refused_without_printing_it(fn: object) -> None:
    with pytest.raises(InvalidSnowflakeError, match=r"12345 has 5 digit\(s\)") as info:
        fn(12345, 10**5000)  # type: ignore[operator]
    assert len(str(info.value)) < 400
    with pytest.raises(InvalidSnowflakeError, match="needs at least 6"):
        fn(12345, 5)  # type: ignore[operator]
