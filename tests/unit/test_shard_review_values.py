"""Shard ids of values that are not plain: an int subclass is hashed as the INT64 the column
stores (not its own str()), an INSERT whose hashed column is in .values() and that is executed
with other parameters is filled (not refused), and ShardId's repr shows non_negative.
"""

from __future__ import annotations

import enum
from datetime import date
from typing import Any

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import (
    InvalidShardError,
    ShardId,
    fill_shard_columns,
    shard_of,
    spanner_shard_column,
    spanner_string,
)

pytest.importorskip("farmhash")

#: Spanner's MOD(FARM_FINGERPRINT('1'), 2048), the shard of a row whose INT64 key is 1
SHARD_OF_1 = -1055


class Status(int, enum.Enum):  # an int-mixin Enum: str() is 'Status.ACTIVE' on Python 3.11+
    ACTIVE = 1


class Level(enum.IntEnum):  # str() is 'Level.ONE' on Python 3.10
    ONE = 1


class Shown(int):
    def __str__(self) -> str:
        return "one"

    __repr__ = __str__


class Loose(int):  # permissive comparisons: range checks must use its int value
    def __ge__(self, other: object) -> bool:
        return True

    def __lt__(self, other: object) -> bool:
        return True

    def __le__(self, other: object) -> bool:
        return True


class Region(str, enum.Enum):
    EU = "eu-west"


class Day(date):
    def isoformat(self) -> str:
        return "the first"


def test_the_plain_int_is_the_known_shard() -> None:
    assert shard_of("1", 2048) == SHARD_OF_1
    assert ShardId("s", shards=2048).of(1) == SHARD_OF_1


@pytest.mark.parametrize("value", [Status.ACTIVE, Level.ONE, Shown(1)])
def test_an_int_subclass_is_hashed_as_its_int(value: int) -> None:
    assert spanner_string(value) == "1"
    assert type(spanner_string(value)) is str
    assert ShardId("s", shards=2048).of(value) == SHARD_OF_1


def test_an_int_subclass_past_int64_is_refused_whatever_it_compares() -> None:
    with pytest.raises(InvalidShardError, match="INT64"):
        spanner_string(Loose(2**64))


def test_a_str_subclass_and_a_date_subclass_are_hashed_as_their_values() -> None:
    assert spanner_string(Region.EU) == "eu-west"
    assert type(spanner_string(Region.EU)) is str
    assert spanner_string(Day(2024, 1, 2)) == "2024-01-02"


class StatusType(sa.TypeDecorator[Any]):  # the common "store an enum as its int" decorator
    impl = sa.BigInteger
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: sa.Dialect) -> Any:
        return None if value is None else int(value)


def test_a_converting_type_decorator_writes_spanners_shard() -> None:
    metadata = sa.MetaData()
    table = sa.Table(
        "accounts",
        metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
        spanner_shard_column("shard", "status", shards=2048),
        sa.Column("status", StatusType()),
    )
    engine = sa.create_engine("sqlite://")
    fill_shard_columns(engine)
    metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(table.insert(), [{"id": 1, "status": Status.ACTIVE}])
        assert conn.execute(sa.select(table.c.shard, table.c.status)).one() == (SHARD_OF_1, 1)


@pytest.fixture(name="logs")
def review_logs() -> tuple[sa.Engine, sa.Table]:
    """A ``logs`` table with a shard column of ``user_id`` on SQLite, its engine opted in."""
    metadata = sa.MetaData()
    table = sa.Table(
        "logs",
        metadata,
        sa.Column("id", sa.Integer, primary_key=True),
        spanner_shard_column("shard", "user_id", shards=16),
        sa.Column("user_id", sa.BigInteger),
        sa.Column("note", sa.String(20)),
    )
    engine = sa.create_engine("sqlite://")
    fill_shard_columns(engine)
    metadata.create_all(engine)
    return engine, table


def stored(engine: sa.Engine, table: sa.Table) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        query = sa.select(table.c.user_id, table.c.note, table.c.shard).order_by(table.c.id)
        return [tuple(row) for row in conn.execute(query)]


def test_values_and_other_parameters_are_hashed_together(logs: tuple[sa.Engine, sa.Table]) -> None:
    engine, table = logs
    with engine.begin() as conn:
        conn.execute(table.insert().values(user_id=5), {"note": "x"})
        many = table.insert().values(user_id=sa.bindparam("user_id", 6))
        conn.execute(many, [{"note": "y"}, {"note": "z", "user_id": 7}])
        conn.execute(table.insert().values(user_id=5), {"note": "w", "user_id": 8})
        named = table.insert().values(user_id=sa.bindparam("uid", 9))
        conn.execute(named, {"note": "v", "user_id": 10})  # SQLAlchemy stores 9
    assert stored(engine, table) == [
        (5, "x", shard_of("5", 16)),
        (6, "y", shard_of("6", 16)),
        (7, "z", shard_of("7", 16)),
        (8, "w", shard_of("8", 16)),  # the parameters win, as in SQLAlchemy
        (9, "v", shard_of("9", 16)),
    ]


def test_a_hashed_column_with_no_value_anywhere_is_still_refused(
    logs: tuple[sa.Engine, sa.Table],
) -> None:
    engine, table = logs
    with engine.begin() as conn, pytest.raises(InvalidShardError, match="no value"):
        conn.execute(table.insert().values(note="x"), {"id": 1})


def test_the_repr_shows_non_negative() -> None:
    assert repr(ShardId("a", shards=8, non_negative=True)) == (
        "ShardId('a', shards=8, non_negative=True)"
    )
    assert repr(ShardId("a", shards=8)) == "ShardId('a', shards=8)"
