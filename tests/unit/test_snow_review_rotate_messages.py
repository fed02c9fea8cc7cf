"""rotate_digits / unrotate_digits errors name the function called and say what to do."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from sqlalchemy_seqkeys import (
    InvalidSnowflakeError,
    Snowflake,
    SnowflakeLayout,
    rotate_digits,
    unrotate_digits,
)


def test_a_value_too_small_to_rotate_says_so_and_asks_for_no_impossible_digits() -> None:
    with pytest.raises(InvalidSnowflakeError) as raised:
        rotate_digits(7)
    message = str(raised.value)
    assert "below 1" not in message  # digits must be at least 1
    assert "too small to rotate" in message
    assert "at least 2 digits" in message
    assert "epoch" in message  # where such ids come from, and what to do


def test_a_smaller_digits_is_offered_only_where_one_exists() -> None:
    with pytest.raises(InvalidSnowflakeError) as raised:
        rotate_digits(123, digits=3)
    message = str(raised.value)
    assert "at least 4 digits" in message
    assert "digits=2 or less" in message
    with pytest.raises(InvalidSnowflakeError, match="too small to unrotate") as raised:
        unrotate_digits(12, digits=5)
    assert "digits=1 or less" in str(raised.value)
    assert "rotate_digits gave" in str(raised.value)


def test_a_transform_at_the_epoch_explains_the_small_id() -> None:
    # tick 0, worker id 0, sequence 0: id 0, one digit
    epoch = datetime(2025, 1, 4, tzinfo=timezone.utc)
    layout = SnowflakeLayout(epoch=epoch)
    at_epoch = int(epoch.timestamp()) * 1_000_000_000
    ids = Snowflake(worker_id=0, layout=layout, transform=rotate_digits, clock=lambda: at_epoch)
    with pytest.raises(InvalidSnowflakeError) as raised:
        ids()
    message = str(raised.value)
    assert "too small to rotate" in message
    assert "epoch further before the first id" in message


def test_unrotate_past_bigint_names_unrotate() -> None:
    with pytest.raises(InvalidSnowflakeError) as raised:
        unrotate_digits(9999999999999999999)
    message = str(raised.value)
    assert message.startswith("unrotate_digits(9999999999999999999) gives")
    assert "rotating" not in message
    assert "rotate_digits gave" in message


def test_rotate_past_bigint_names_rotate() -> None:
    with pytest.raises(InvalidSnowflakeError) as raised:
        rotate_digits(9223372036854775799)
    assert str(raised.value).startswith("rotate_digits(9223372036854775799) gives")
