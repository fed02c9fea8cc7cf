"""reverse_bits and the FarmHash shard ids, against the BRIEF's emulator vectors; the opt-in
of an engine to shard-column filling (fill_shard_columns and the seqkeys_shards plugin)."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.orm import Session

from sqlalchemy_seqkeys import (
    InvalidBitReversalError,
    InvalidShardError,
    Snowflake,
    farm_fingerprint,
    fill_shard_columns,
    reverse_bits,
    shard_of,
)
from sqlalchemy_seqkeys.shard import ShardColumnsPlugin
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


# -- fill_shard_columns: the opt-in of one engine ---------------------------------------------


@pytest.mark.parametrize(
    "make",
    [lambda: "sqlite://", lambda: None, lambda: 5, sa.MetaData, Session, ShardColumnsPlugin],
    ids=["url", "None", "int", "MetaData", "Session", "the plugin class"],
)
def test_fill_shard_columns_takes_engines_only(make: Any) -> None:
    bad = make() if make is not ShardColumnsPlugin else make
    with pytest.raises(InvalidShardError, match="takes an Engine or an AsyncEngine") as info:
        fill_shard_columns(bad)
    assert f"({type(bad).__name__})" in str(info.value)


def test_fill_shard_columns_refuses_a_connection_and_names_its_engine() -> None:
    engine = sa.create_engine("sqlite://")
    with engine.connect() as conn, pytest.raises(InvalidShardError, match=r"connection\.engine"):
        fill_shard_columns(conn)  # type: ignore[arg-type]
    assert not sa.event.contains(engine, "before_execute", _fill_shard_ids())


def test_fill_shard_columns_installs_one_listener_on_that_engine_only() -> None:
    engine, other = sa.create_engine("sqlite://"), sa.create_engine("sqlite://")
    assert fill_shard_columns(engine) is None
    fill_shard_columns(engine)
    fill_shard_columns(engine.execution_options(compiled_cache=None))  # the same engine
    assert sa.event.contains(engine, "before_execute", _fill_shard_ids())
    assert not sa.event.contains(other, "before_execute", _fill_shard_ids())
    assert len(list(engine.dispatch.before_execute)) - len(list(other.dispatch.before_execute)) == 1


def test_fill_shard_columns_of_an_async_engine_is_its_sync_engine() -> None:
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine("sqlite+aiosqlite://")
    fill_shard_columns(engine)
    assert sa.event.contains(engine.sync_engine, "before_execute", _fill_shard_ids())


def test_the_seqkeys_shards_engine_plugin_is_installed() -> None:
    from importlib.metadata import entry_points

    (point,) = entry_points(group="sqlalchemy.plugins", name="seqkeys_shards")
    assert point.load() is ShardColumnsPlugin
    engine = sa.create_engine("sqlite://", plugins=["seqkeys_shards"])
    assert sa.event.contains(engine, "before_execute", _fill_shard_ids())
    assert engine.url.render_as_string() == "sqlite://"  # nothing of the plugin's is left
    queried = sa.create_engine("sqlite:///?plugin=seqkeys_shards")
    assert sa.event.contains(queried, "before_execute", _fill_shard_ids())


def _fill_shard_ids() -> Any:
    from sqlalchemy_seqkeys import shard

    return shard._fill_shard_ids
