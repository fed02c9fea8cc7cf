"""63-bit and 64-bit integer keys in NUMERIC columns, and SQLite, which has no decimal type.

SQLAlchemy binds a ``Numeric`` value as a float on SQLite, so snowflake ids
that differ in their low bits became one value there: duplicates in a plain
column, an IntegrityError on a primary key. The column check now refuses a
``Numeric`` key column that has no integer variant for SQLite
(tests/unit/test_column_checks_more.py); here, on the engines:

- what it refuses is real (SQLite rounds the keys of a ``Numeric`` column);
- the type it recommends, ``Numeric(...).with_variant(sa.BigInteger(), "sqlite")``,
  keeps every key on SQLite, PostgreSQL and MariaDB, sync and async;
- an unsigned layout's ids past 2**63 - 1 fail loudly on SQLite (OverflowError
  from sqlite3 and aiosqlite, nothing stored), never rounded, and are stored
  exactly in PostgreSQL's and MariaDB's NUMERIC(20, 0);
- ``seqkeys doctor`` reports a NUMERIC key column on SQLite, and its fix works.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import InvalidSnowflakeError, Snowflake, SnowflakeLayout, doctor
from tests.conftest import _async_database

pytestmark = pytest.mark.backend

ROWS = 1000
UNSIGNED = SnowflakeLayout.discord(unsigned=True)


def _clock_at(tick: int) -> Any:
    """A Snowflake clock (ns) stopped at ``tick`` of the unsigned layout."""
    ns = int(UNSIGNED.instant_of(tick).timestamp() * 1000) * 1_000_000
    return lambda: ns


#: the first tick whose ids are past 2**63 - 1 (the layout's top timestamp bit)
PAST_BIGINT = 2 ** (UNSIGNED.timestamp_bits - 1)


def _events(metadata: sa.MetaData, type_: Any, default: Any) -> sa.Table:
    """A key in a plain indexed column (not unique): duplicates would go unnoticed."""
    return sa.Table(
        "seqkeys_numeric_events",
        metadata,
        sa.Column("pk", sa.Integer, primary_key=True),
        sa.Column("event_id", type_, default=default, index=True),
        sa.Column("n", sa.Integer),
    )


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def db(request: pytest.FixtureRequest, engines: Any) -> Iterator[tuple[Engine, sa.MetaData]]:
    engine = engines.get(request.param)
    metadata = sa.MetaData()
    yield engine, metadata
    metadata.drop_all(engine)


def test_sqlite_rounds_the_keys_of_a_numeric_column(engines: Any) -> None:
    """What the check refuses: the column itself, with keys given by hand."""
    engine = engines.get("sqlite")
    metadata = sa.MetaData()
    plain = _events(metadata, sa.Numeric(19, 0), None)
    ids = Snowflake(worker_id=3)
    minted = [ids() for _ in range(ROWS)]
    metadata.create_all(engine)
    try:
        with engine.begin() as conn:
            conn.execute(plain.insert(), [{"event_id": k, "n": i} for i, k in enumerate(minted)])
            stored = conn.scalar(sa.select(sa.func.count(sa.distinct(plain.c.event_id))))
        assert stored is not None
        assert stored < ROWS  # SQLAlchemy's float binding: were this ever exact, relax the check
    finally:
        metadata.drop_all(engine)


def test_a_numeric_key_column_without_a_sqlite_variant_is_refused() -> None:
    # before: accepted, and SQLite stored 1,000 ids as a handful of distinct values
    with pytest.raises(InvalidSnowflakeError, match=r"on SQLite, which has no variant of its own"):
        _events(sa.MetaData(), sa.Numeric(19, 0), Snowflake(worker_id=3))


def test_the_sqlite_variant_keeps_every_key(db: tuple[Engine, sa.MetaData]) -> None:
    engine, metadata = db
    events = _events(
        metadata, sa.Numeric(19, 0).with_variant(sa.BigInteger(), "sqlite"), Snowflake(worker_id=3)
    )
    metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(events.insert(), [{"n": i} for i in range(ROWS)])
        conn.execute(events.insert(), {"n": ROWS})
        keys = conn.scalars(sa.select(events.c.event_id)).all()
    assert len(keys) == ROWS + 1
    assert len({int(k) for k in keys}) == ROWS + 1
    assert all(int(k) == k for k in keys)


@pytest.mark.parametrize("label", ["sqlite+aiosqlite", "postgresql+asyncpg", "mysql+asyncmy"])
def test_the_sqlite_variant_keeps_every_key_async(label: str, engines: Any) -> None:
    database = _async_database(label, engines)
    metadata = sa.MetaData()
    events = _events(
        metadata, sa.Numeric(19, 0).with_variant(sa.BigInteger(), "sqlite"), Snowflake(worker_id=3)
    )

    async def main() -> list[Any]:
        engine = database.engine()
        try:
            async with engine.begin() as conn:
                await conn.run_sync(metadata.create_all)
            async with engine.begin() as conn:
                await conn.execute(events.insert(), [{"n": i} for i in range(ROWS)])
                return list((await conn.scalars(sa.select(events.c.event_id))).all())
        finally:
            async with engine.begin() as conn:
                await conn.run_sync(metadata.drop_all)
            await engine.dispose()

    keys = asyncio.run(main())
    assert len({int(k) for k in keys}) == ROWS


def _unsigned_events(metadata: sa.MetaData, tick: int) -> sa.Table:
    ids = Snowflake(worker_id=3, layout=UNSIGNED, clock=_clock_at(tick))
    type_ = sa.Numeric(20, 0).with_variant(sa.BigInteger(), "sqlite")
    return _events(metadata, type_, ids)


def test_an_unsigned_id_past_bigint_fails_loudly_on_sqlite(engines: Any) -> None:
    engine = engines.get("sqlite")
    metadata = sa.MetaData()
    before = _unsigned_events(metadata, PAST_BIGINT - 1)
    metadata.create_all(engine)
    try:
        with engine.begin() as conn:
            conn.execute(before.insert(), [{"n": i} for i in range(10)])
            kept = conn.scalars(sa.select(before.c.event_id)).all()
        assert len(set(kept)) == 10
        assert all(k <= 2**63 - 1 for k in kept)

        after = _unsigned_events(sa.MetaData(), PAST_BIGINT)
        with pytest.raises(OverflowError), engine.begin() as conn:
            conn.execute(after.insert(), {"n": 10})
        with engine.connect() as conn:
            assert sorted(conn.scalars(sa.select(before.c.event_id)).all()) == sorted(kept)
    finally:
        metadata.drop_all(engine)


def test_an_unsigned_id_past_bigint_fails_loudly_on_aiosqlite(engines: Any) -> None:
    database = _async_database("sqlite+aiosqlite", engines)
    metadata = sa.MetaData()
    after = _unsigned_events(metadata, PAST_BIGINT)

    async def main() -> None:
        engine = database.engine()
        try:
            async with engine.begin() as conn:
                await conn.run_sync(metadata.create_all)
            with pytest.raises(OverflowError):
                async with engine.begin() as conn:
                    await conn.execute(after.insert(), {"n": 1})
            async with engine.connect() as conn:
                assert (await conn.scalar(sa.select(sa.func.count()).select_from(after))) == 0
        finally:
            async with engine.begin() as conn:
                await conn.run_sync(metadata.drop_all)
            await engine.dispose()

    asyncio.run(main())


@pytest.mark.parametrize("name", ["postgresql", "mysql"])
def test_an_unsigned_id_past_bigint_is_exact_in_numeric_20(name: str, engines: Any) -> None:
    engine = engines.get(name)
    metadata = sa.MetaData()
    events = _unsigned_events(metadata, PAST_BIGINT + 7)
    metadata.create_all(engine)
    try:
        with engine.begin() as conn:
            conn.execute(events.insert(), [{"n": i} for i in range(50)])
            keys = [int(k) for k in conn.scalars(sa.select(events.c.event_id))]
        assert len(set(keys)) == len(keys) == 50
        assert all(2**63 <= k < 2**64 for k in keys)
        assert {UNSIGNED.decompose(k)[:2] for k in keys} == {(PAST_BIGINT + 7, 3)}
    finally:
        metadata.drop_all(engine)


def test_doctor_reports_a_numeric_key_column_on_sqlite(engines: Any) -> None:
    """The database's column is NUMERIC(19, 0) (an older model made it); the model says BIGINT."""
    with engines.fresh_database("sqlite", "numeric") as url:
        engine = sa.create_engine(url)
        try:
            with engine.begin() as conn:
                conn.exec_driver_sql(
                    "CREATE TABLE seqkeys_numeric_events "
                    "(pk INTEGER PRIMARY KEY, event_id NUMERIC(19, 0), n INTEGER)"
                )
            metadata = sa.MetaData()
            _events(metadata, sa.BigInteger(), Snowflake(worker_id=3))
            report = doctor(engine, metadata)
            (problem,) = report.problems  # before: healthy
            assert (problem.check, problem.subject) == ("schema", "seqkeys_numeric_events.event_id")
            assert "NUMERIC(19, 0)" in problem.message
            assert "float on SQLite" in problem.message
            assert problem.fix is not None
            assert "type_=sa.BigInteger()" in problem.fix

            from alembic.migration import MigrationContext
            from alembic.operations import Operations

            with engine.begin() as conn:
                op = Operations(MigrationContext.configure(conn))
                exec(problem.fix.removeprefix("in a migration: "), {"op": op, "sa": sa})
            assert doctor(engine, metadata).healthy
        finally:
            engine.dispose()
