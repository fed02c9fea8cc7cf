"""ShardId as a primary-key prefix through the ORM, on every engine."""

from __future__ import annotations

import contextlib
import random
import string
from collections.abc import Iterator
from datetime import date, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from sqlalchemy_seqkeys import (
    InvalidShardError,
    NaiveDatetimeError,
    ShardId,
    farm_fingerprint,
    fill_shard_columns,
    spanner_shard_column,
    spanner_string,
)
from tests._emulator import configure_engine
from tests._helpers import fresh_tables

pytestmark = pytest.mark.backend


def test_shard_id_default_fills_the_key_prefix(engine: Engine) -> None:
    shard = ShardId("user_id", "last_access", shards=64)

    class Base(DeclarativeBase):
        pass

    class Access(Base):
        __tablename__ = "seqkeys_shard_access"
        shard_id: Mapped[int] = mapped_column(
            sa.BigInteger, primary_key=True, default=shard, autoincrement=False
        )
        user_id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
        last_access: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), primary_key=True)

    start = datetime(2024, 3, 10, 9, 0, tzinfo=timezone.utc)  # around a DST change in LA
    rows = [(u, start + timedelta(minutes=17 * u, milliseconds=u)) for u in range(-50, 150)]
    with fresh_tables(engine, Base.metadata):
        with Session(engine) as session:
            session.add_all(Access(user_id=u, last_access=t) for u, t in rows)
            session.commit()
            stored = {(a.user_id, a.shard_id) for a in session.scalars(sa.select(Access))}
        assert stored == {(u, shard.of(u, t)) for u, t in rows}
        assert any(s < 0 for _, s in stored)  # Spanner's MOD keeps the sign


def test_canonical_forms_and_refusals() -> None:
    assert spanner_string(datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc)) == (
        "2024-01-01 19:04:05.678-08"
    )
    assert spanner_string(datetime(2024, 7, 2, 3, 4, 5, 123456, tzinfo=timezone.utc)) == (
        "2024-07-01 20:04:05.123456-07"
    )
    with pytest.raises(NaiveDatetimeError):
        spanner_string(datetime(2024, 1, 1))
    with pytest.raises(InvalidShardError, match="cannot hash NULL"):
        spanner_string(None)
    with pytest.raises(InvalidShardError, match="cannot hash a float"):
        spanner_string(1.5)
    with pytest.raises(InvalidShardError, match="at least one column"):
        ShardId(shards=4)


@contextlib.contextmanager
def own_engine(engine: Engine, query: dict[str, str] | None = None, **kw: Any) -> Iterator[Engine]:
    """A new engine on the database of the suite's ``engine`` (``query`` added to its URL,
    ``kw`` to create_engine), disposed after.

    The suite's engines are shared by every test: an opt-in, or the one warning a
    deprecated path gives per engine, belongs to an engine of the test's own.
    """
    mine = sa.create_engine(engine.url.update_query_dict(query or {}), **kw)
    if mine.dialect.name.startswith("spanner"):
        configure_engine(mine)
    try:
        yield mine
    finally:
        mine.dispose()


@contextlib.contextmanager
def filling_engine(engine: Engine, metadata: sa.MetaData) -> Iterator[Engine]:
    """An ``own_engine`` that fills shard columns (``fill_shard_columns``), with
    ``metadata``'s tables created anew on it, dropped after."""
    with own_engine(engine) as mine:
        fill_shard_columns(mine)
        with fresh_tables(mine, metadata):
            yield mine


def shard_column_table(metadata: sa.MetaData, name: str = "seqkeys_shard_generated") -> sa.Table:
    return sa.Table(
        name,
        metadata,
        spanner_shard_column("shard", "n", "s", "b", "ts", "d", shards=2048, primary_key=True),
        sa.Column("n", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("s", sa.String(40), nullable=False),
        sa.Column("b", sa.Boolean, nullable=False),
        sa.Column("ts", sa.DateTime(timezone=True), nullable=False),
        sa.Column("d", sa.Date, nullable=False),
    )


def generated_rows(count: int) -> list[dict[str, object]]:
    rng = random.Random(11)
    la = ZoneInfo("America/Los_Angeles")
    rows: list[dict[str, object]] = []
    for i in range(count):
        instant = datetime(2020, 1, 1, tzinfo=timezone.utc) + timedelta(
            seconds=rng.randint(0, 6 * 365 * 86400),
            microseconds=rng.choice([0, 250000, 123456, 1000]),
        )
        rows.append(
            {
                "n": i * 7919 - 3_000_000_000_000 if i % 2 else i,
                "s": "".join(rng.choice(string.ascii_letters + "éß漢 ") for _ in range(i % 13)),
                "b": bool(i % 3),
                "ts": instant if i % 4 else instant.astimezone(la),
                "d": date(1990, 1, 1) + timedelta(days=rng.randint(0, 20000)),
            }
        )
    return rows


def test_spanner_generates_what_shard_of_computes(spanner_engine: Engine) -> None:
    metadata = sa.MetaData()
    table = shard_column_table(metadata)
    rows = generated_rows(1200)
    with fresh_tables(spanner_engine, metadata):
        with spanner_engine.begin() as conn:
            conn.execute(sa.insert(table), rows)  # no shard values: the server computes them
        with spanner_engine.connect() as conn:
            stored = dict(conn.execute(sa.select(table.c.n, table.c.shard)).all())
        shard = ShardId("n", "s", "b", "ts", "d", shards=2048)
        expected = {r["n"]: shard.of(r["n"], r["s"], r["b"], r["ts"], r["d"]) for r in rows}
        assert len(stored) == 1200
        assert stored == expected
        assert sum(v < 0 for v in stored.values()) > 400  # negative hashes keep their sign


def test_shard_column_is_filled_on_every_engine(engine: Engine) -> None:
    metadata = sa.MetaData()
    table = shard_column_table(metadata)
    with filling_engine(engine, metadata) as mine:
        check_filled_on_insert(mine, table)


def check_filled_on_insert(engine: Engine, table: sa.Table) -> None:
    rows = generated_rows(60)
    shard = ShardId("n", "s", "b", "ts", "d", shards=2048)
    with engine.begin() as conn:
        conn.execute(sa.insert(table), rows[:50])  # executemany
        conn.execute(sa.insert(table), rows[50])  # one row as parameters
        conn.execute(sa.insert(table).values(**rows[51]))  # values in the statement
    with engine.connect() as conn:
        stored = dict(conn.execute(sa.select(table.c.n, table.c.shard)).all())
    assert stored == {r["n"]: shard.of(r["n"], r["s"], r["b"], r["ts"], r["d"]) for r in rows[:52]}
    if engine.dialect.name.startswith("spanner"):
        return  # a wrong or missing value is the server's business there
    with (
        pytest.raises(InvalidShardError, match="was given 5, but the row hashes to"),
        engine.begin() as conn,
    ):
        conn.execute(sa.insert(table), {**rows[52], "shard": 5})
    incomplete = dict(rows[53])
    del incomplete["ts"]
    with (
        pytest.raises(InvalidShardError, match="hashes column 'ts', which has no value"),
        engine.begin() as conn,
    ):
        conn.execute(sa.insert(table), incomplete)


def test_hashed_columns_whose_key_is_not_their_name(engine: Engine) -> None:
    """Spanner's generated column names the columns; the filled value reads the keys."""
    metadata = sa.MetaData()
    table = sa.Table(
        "seqkeys_shard_keyed",
        metadata,
        sa.Column("UserId", sa.BigInteger, primary_key=True, autoincrement=False, key="user_id"),
        sa.Column("LastAccess", sa.DateTime(timezone=True), nullable=False, key="last_access"),
        spanner_shard_column("ShardId", "user_id", "last_access", shards=64, key="shard_id"),
    )
    shard = ShardId("user_id", "last_access", shards=64)
    start = datetime(1850, 6, 1, 12, 30, 15, tzinfo=timezone.utc)  # LMT, too
    rows = [
        {"user_id": u, "last_access": start + timedelta(days=4099 * u, seconds=u)}
        for u in range(40)
    ]
    with filling_engine(engine, metadata) as mine:
        with mine.begin() as conn:
            conn.execute(sa.insert(table), rows[:30])
            conn.execute(sa.insert(table), rows[30])
            conn.execute(sa.insert(table).values(**rows[31]))
        with mine.connect() as conn:
            select = sa.select(table.c.user_id, table.c.shard_id)
            stored = dict(conn.execute(select).all())
        assert stored == {r["user_id"]: shard.of(r["user_id"], r["last_access"]) for r in rows[:32]}


@pytest.mark.parametrize("shards", [3, 2**62])
def test_non_negative_shards_up_to_2_62(engine: Engine, shards: int) -> None:
    """``MOD(MOD(x, N) + N, N)`` stays within INT64 on Spanner for every N it is given."""
    metadata = sa.MetaData()
    table = sa.Table(
        "seqkeys_shard_non_negative",
        metadata,
        sa.Column("k", sa.String(20), primary_key=True),
        spanner_shard_column("shard", "k", shards=shards, non_negative=True),
    )
    keys = [f"k{i}" for i in range(60)] + ["d", "a", "alphabet"]
    with filling_engine(engine, metadata) as mine:
        with mine.begin() as conn:
            conn.execute(sa.insert(table), [{"k": k} for k in keys])
        with mine.connect() as conn:
            stored = dict(conn.execute(sa.select(table.c.k, table.c.shard)).all())
        assert stored == {k: farm_fingerprint(k) % shards for k in keys}
        assert any(farm_fingerprint(k) < 0 for k in keys)
