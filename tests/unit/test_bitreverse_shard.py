"""reverse_bits and the FarmHash shard ids, against the BRIEF's emulator vectors."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqlalchemy_seqkeys import (
    InvalidBitReversalError,
    InvalidShardError,
    Snowflake,
    farm_fingerprint,
    reverse_bits,
    shard_of,
)
from tests._helpers import without_package


@pytest.mark.parametrize(
    ("counter", "value"),
    [
        (1, 4611686018427387904),  # 2**62, as the emulator returns for counter 1
        (2, 2305843009213693952),
        (1000, 855683929200394240),  # start_with_counter = 1000
        (1001, 5467369947627782144),
        (0, 0),
        (2**63 - 1, 2**63 - 1),
    ],
)
def test_reverse_bits_vectors(counter: int, value: int) -> None:
    assert reverse_bits(counter) == value


@given(st.integers(min_value=0, max_value=2**63 - 1))
def test_reverse_bits_is_its_own_inverse(n: int) -> None:
    assert reverse_bits(reverse_bits(n)) == n
    assert 0 <= reverse_bits(n) < 2**63


@pytest.mark.parametrize("bad", [-1, 2**63, 1.0, True, "1"])
def test_reverse_bits_bad_input(bad: Any) -> None:
    with pytest.raises(InvalidBitReversalError):
        reverse_bits(bad)


def test_snowflake_transform_reverse_bits_decodes() -> None:
    ids = Snowflake(worker_id=3, transform=reverse_bits)
    assert ids.decode(ids()).worker_id == 3


@pytest.mark.parametrize(
    ("text", "fingerprint"),
    [
        ("1footrue", -1541654101129638711),
        ("2applefalse", 2794438866806483259),
        ("3true", -4880158226897771312),
        ("alphabet", -2427165924636348523),
        ("a", -5528939962900187677),
    ],
)
def test_farm_fingerprint_vectors(text: str, fingerprint: int) -> None:
    assert farm_fingerprint(text) == fingerprint
    assert farm_fingerprint(text.encode()) == fingerprint


def test_shard_of_truncates_toward_zero_like_spanner_mod() -> None:
    assert shard_of("a", 16) == -13  # MOD(FARM_FINGERPRINT('a'), 16) on Spanner
    assert shard_of("a", 16, non_negative=True) == 3  # Python's %
    assert shard_of("2applefalse", 16) == 2794438866806483259 % 16
    with pytest.raises(InvalidShardError, match="shards must be an int from 1 to"):
        shard_of("a", 0)
    with pytest.raises(InvalidShardError, match="hashes str or bytes"):
        farm_fingerprint(12)  # type: ignore[arg-type]


def test_missing_farmhash_names_the_extra() -> None:
    code = (
        "from sqlalchemy_seqkeys import MissingExtraError, farm_fingerprint\n"
        "try:\n"
        "    farm_fingerprint('a')\n"
        "except MissingExtraError as exc:\n"
        "    print(exc)\n"
    )
    assert "sqlalchemy-seqkeys[farmhash]" in without_package("farmhash", code)
