"""reverse_bits and the FarmHash shard ids, against the BRIEF's emulator vectors; the opt-in
of an engine to shard-column filling (fill_shard_columns and the seqkeys_shards plugin)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.orm import Session

from sqlalchemy_seqkeys import (
    InvalidBitReversalError,
    InvalidShardError,
    ShardId,
    Snowflake,
    farm_fingerprint,
    fill_shard_columns,
    reverse_bits,
    shard_of,
    spanner_shard_column,
    spanner_string,
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


# -- the text of a TIMESTAMP, and what cannot be hashed ---------------------------------------


@pytest.mark.parametrize(
    ("instant", "text", "shard"),
    [
        # CAST(@t AS STRING) and MOD(FARM_FINGERPRINT(CAST(@t AS STRING)), 2048) on the emulator:
        # before 1883-11-18 20:00 UTC, Los Angeles' LMT, -07:52:58, truncated to -07:52, and the
        # local time computed with the truncated offset; years below 1000 padded to 4 digits
        ((1, 1, 1, 0, 0, 0, 0), "0000-12-31 16:08:00-07:52", -1935),
        ((1, 1, 1, 0, 0, 0, 1000), "0000-12-31 16:08:00.001-07:52", -1320),
        ((1, 1, 1, 7, 51, 59, 999999), "0000-12-31 23:59:59.999999-07:52", -1907),
        ((1, 1, 1, 7, 52, 59, 0), "0001-01-01 00:00:59-07:52", -1899),
        ((999, 12, 31, 12, 0, 0, 0), "0999-12-31 04:08:00-07:52", 1885),
        ((1850, 6, 1, 12, 30, 15, 0), "1850-06-01 04:38:15-07:52", -851),
        ((1883, 11, 18, 19, 59, 59, 999999), "1883-11-18 12:07:59.999999-07:52", 1612),
        ((1883, 11, 18, 20, 0, 0, 0), "1883-11-18 12:00:00-08", -1440),
        ((9999, 12, 31, 23, 59, 59, 999999), "9999-12-31 15:59:59.999999-08", 398),
    ],
)
def test_timestamp_text_equals_spanners_at_the_edges(
    instant: tuple[int, ...], text: str, shard: int
) -> None:
    value = datetime(*instant, tzinfo=timezone.utc)
    assert spanner_string(value) == text
    assert ShardId("t", shards=2048).of(value) == shard


@pytest.mark.parametrize(
    "value",
    [
        datetime.max.replace(tzinfo=timezone(timedelta(hours=-12))),  # 10000-01-01 in UTC
        datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))),  # 0000-12-31 in UTC
    ],
    ids=["after 9999", "before year 1"],
)
def test_a_timestamp_spanner_cannot_hold_is_refused(value: datetime) -> None:
    with pytest.raises(InvalidShardError, match="outside Spanner's TIMESTAMP range"):
        spanner_string(value)
    with pytest.raises(InvalidShardError, match="outside Spanner's TIMESTAMP range"):
        ShardId("t", shards=16).of(value)


@pytest.mark.parametrize("text", ["\ud800", "a\udc80b"])
def test_a_lone_surrogate_is_refused(text: str) -> None:
    with pytest.raises(InvalidShardError, match="lone surrogate"):
        farm_fingerprint(text)
    with pytest.raises(InvalidShardError, match="lone surrogate"):
        shard_of(text, 16)
    with pytest.raises(InvalidShardError, match="lone surrogate"):
        ShardId("s", shards=16).of(text)


# -- non_negative: MOD(MOD(x, N) + N, N) stays within INT64 -----------------------------------


@pytest.mark.parametrize("shards", [2**62 + 1, 2**63 - 2, 2**63 - 1])
def test_non_negative_refuses_shards_spanner_would_overflow(shards: int) -> None:
    match = r"non_negative=True takes shards up to 2\*\*62"
    with pytest.raises(InvalidShardError, match=match):
        shard_of("a", shards, non_negative=True)
    with pytest.raises(InvalidShardError, match=match):
        ShardId("a", shards=shards, non_negative=True)
    with pytest.raises(InvalidShardError, match=match):
        spanner_shard_column("shard", "a", shards=shards, non_negative=True)
    assert shard_of("a", shards) == -(abs(farm_fingerprint("a")) % shards)  # MOD alone is fine


def test_non_negative_up_to_2_62_is_pythons_modulo() -> None:
    for text in ("a", "1footrue", "alphabet", "2applefalse"):
        for shards in (1, 16, 2**31, 2**62 - 1, 2**62):
            assert shard_of(text, shards, non_negative=True) == farm_fingerprint(text) % shards


# -- a hashed column whose key is not its name ------------------------------------------------


def keyed_table() -> sa.Table:
    return sa.Table(
        "UserAccessLogs",
        sa.MetaData(),
        sa.Column("UserId", sa.BigInteger, primary_key=True, autoincrement=False, key="user_id"),
        sa.Column("LastAccess", sa.DateTime(timezone=True), key="last_access"),
        spanner_shard_column("ShardId", "user_id", "last_access", shards=64, key="shard_id"),
    )


def test_spanner_ddl_names_the_hashed_columns_not_their_keys() -> None:
    from google.cloud.sqlalchemy_spanner.sqlalchemy_spanner import SpannerDialect
    from sqlalchemy.schema import CreateTable

    ddl = " ".join(str(CreateTable(keyed_table()).compile(dialect=SpannerDialect())).split())
    assert (
        "`ShardId` INT64 NOT NULL AS (MOD(FARM_FINGERPRINT(CONCAT(CAST(`UserId` AS STRING), "
        "CAST(`LastAccess` AS STRING))), 64)) STORED" in ddl
    )
    assert "last_access" not in ddl
    assert "user_id" not in ddl


def test_alembic_renders_the_hashed_columns_by_name() -> None:
    from alembic.autogenerate import render_python_code
    from alembic.operations import ops

    import sqlalchemy_seqkeys.alembic

    code = render_python_code(
        ops.UpgradeOps(ops=[ops.CreateTableOp.from_table(keyed_table())]),
        render_item=sqlalchemy_seqkeys.alembic.render_item,
    )
    # Alembic writes the script's columns by name (sa.Column('LastAccess', ...)): the shard
    # column of the script must hash those names, not the model's keys
    assert "sa.Column('LastAccess'" in code
    assert (
        "sqlalchemy_seqkeys.spanner_shard_column('ShardId', 'UserId', 'LastAccess', shards=64, "
        "nullable=False)" in code
    )


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**70])
def test_an_int_spanner_cannot_hold_is_refused(value: int) -> None:
    with pytest.raises(InvalidShardError, match="INT64"):
        spanner_string(value)
    assert spanner_string(2**63 - 1) == str(2**63 - 1)
    assert spanner_string(-(2**63)) == str(-(2**63))
