"""Shard columns are filled by the engines that opt in; the old hook on every engine warns.

``fill_shard_columns(engine)`` or ``create_engine(url, plugins=["seqkeys_shards"])``
puts the listener on one engine; the process-wide hook that ``spanner_shard_column``
installed before is kept for one minor version and warns once per engine that did not
opt in. On every engine: Core executemany, one row, ``.values(...)``, the ORM and
AsyncEngine, with the value Spanner's own generated column holds.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine
from sqlalchemy.orm import Session, registry

from sqlalchemy_seqkeys import (
    InvalidShardError,
    ShardId,
    fill_shard_columns,
    spanner_shard_column,
)
from tests._shard_fixtures import (
    SHARD_TABLE,
    Row,
    is_spanner,
    shard_table,  # noqa: F401 - the table fixture
    stored_shard_ids,
)
from tests.backend.test_shard_orm import (
    filling_engine,
    generated_rows,
    own_engine,
    shard_column_table,
)
from tests.conftest import AsyncDatabase

pytestmark = pytest.mark.backend

SHARD = ShardId("n", "s", "b", "ts", "d", shards=2048)
DEPRECATED = r"did not opt in.*fill_shard_columns\(engine\).*plugins=\['seqkeys_shards'\]"


def expected(rows: list[dict[str, Any]]) -> dict[Any, int]:
    return {r["n"]: SHARD.of(r["n"], r["s"], r["b"], r["ts"], r["d"]) for r in rows}


def insert_every_way(engine: Engine, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    """Core executemany, one row as parameters, ``.values(...)`` and an ORM flush."""
    assert len(rows) >= 30
    with engine.begin() as conn:
        conn.execute(sa.insert(table), rows[:20])
        conn.execute(sa.insert(table), rows[20])
        conn.execute(sa.insert(table).values(**rows[21]))
    mapper = registry()
    mapper.map_imperatively(Row, table)
    try:
        with Session(engine) as session:
            session.add_all(Row(**r) for r in rows[22:30])
            session.commit()
    finally:
        mapper.dispose()


#: how a test's own engine opts in: the function (called in the test), or the plugin
OPT_INS: dict[str, Callable[[Engine], AbstractContextManager[Engine]]] = {
    "fill_shard_columns": lambda engine: own_engine(engine),
    "plugins=": lambda engine: own_engine(engine, plugins=["seqkeys_shards"]),
    "?plugin=": lambda engine: own_engine(engine, {"plugin": "seqkeys_shards"}),
}


@pytest.mark.parametrize("how", list(OPT_INS))
def test_an_engine_that_opted_in_fills_every_insert_without_a_warning(
    engine: Engine, table: sa.Table, how: str
) -> None:
    rows = generated_rows(30)
    with OPT_INS[how](engine) as mine:
        if how == "fill_shard_columns":
            fill_shard_columns(mine)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no DeprecationWarning, nor anything else
            insert_every_way(mine, table, rows)
        assert stored_shard_ids(mine, table) == expected(rows)  # on Spanner: the server's values


def test_an_engine_that_opted_in_computes_each_row_once(
    engine: Engine, table: sa.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the process-wide hook (installed by spanner_shard_column) leaves it to the engine's own
    assert sa.event.contains(sa.Engine, "before_execute", _implicit_listener())
    computed: list[tuple[object, ...]] = []
    of = ShardId.of

    def counting(self: ShardId, *values: object) -> int:
        computed.append(values)
        return of(self, *values)

    monkeypatch.setattr(ShardId, "of", counting)
    rows = generated_rows(12)
    with own_engine(engine) as mine:
        fill_shard_columns(mine)
        fill_shard_columns(mine)  # a second call changes nothing
        with mine.begin() as conn:
            conn.execute(sa.insert(table), rows[:10])
            conn.execute(sa.insert(table).values(**rows[10]))
        with mine.execution_options(compiled_cache=None).begin() as conn:
            conn.execute(sa.insert(table), rows[11])  # a copy of the engine: opted in too
    assert len(computed) == (0 if is_spanner(engine) else 12)  # Spanner computes it itself
    monkeypatch.undo()
    assert stored_shard_ids(engine, table) == expected(rows)


def _implicit_listener() -> Any:
    from sqlalchemy_seqkeys import shard

    return shard._fill_shard_ids_implicitly


def test_an_engine_that_did_not_opt_in_warns_once_and_is_still_filled(
    engine: Engine, table: sa.Table
) -> None:
    rows = generated_rows(40)
    if is_spanner(engine):  # the server fills the column: nothing to do, nothing to warn
        with own_engine(engine) as old, warnings.catch_warnings():
            warnings.simplefilter("error")
            insert_every_way(old, table, rows[:30])
        assert stored_shard_ids(engine, table) == expected(rows[:30])
        return
    right = expected(rows[:1])[rows[0]["n"]]
    with own_engine(engine) as old:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a row refused was not filled: no warning yet
            with pytest.raises(InvalidShardError, match="was given"), old.begin() as conn:
                conn.execute(sa.insert(table), {**rows[0], "shard": right + 1})
        with pytest.warns(DeprecationWarning, match=DEPRECATED) as caught:
            insert_every_way(old, table, rows[:30])
        assert [w.category for w in caught] == [DeprecationWarning]
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # once per engine: not again
            with old.begin() as conn:
                conn.execute(sa.insert(table), rows[30:35])
            with old.execution_options(compiled_cache=None).begin() as conn:
                conn.execute(sa.insert(table), rows[35])  # a copy of the same engine
    with (
        own_engine(engine) as other,
        pytest.warns(DeprecationWarning, match=DEPRECATED),  # another engine warns again
        other.begin() as conn,
    ):
        conn.execute(sa.insert(table), rows[36:])
    assert stored_shard_ids(engine, table) == expected(rows)


def test_the_filled_value_is_spanners_farm_fingerprint(engine: Engine) -> None:
    # the FarmHash vectors of tests/unit/test_bitreverse_shard.py, as CONCAT(n, s, b):
    # shards=2**63 - 1 keeps the whole fingerprint, 16 shows MOD's sign
    vectors = {1: ("foo", True, -1541654101129638711), 2: ("apple", False, 2794438866806483259)}
    vectors[3] = ("", True, -4880158226897771312)
    metadata = sa.MetaData()
    table = sa.Table(
        "seqkeys_shard_vectors",
        metadata,
        spanner_shard_column("shard", "n", "s", "b", shards=16, primary_key=True),
        sa.Column("n", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("s", sa.String(20), nullable=False),
        sa.Column("b", sa.Boolean, nullable=False),
        spanner_shard_column("fingerprint", "n", "s", "b", shards=2**63 - 1),
    )
    with filling_engine(engine, metadata) as mine:
        with mine.begin() as conn:
            conn.execute(
                sa.insert(table), [{"n": n, "s": s, "b": b} for n, (s, b, _) in vectors.items()]
            )
        with mine.connect() as conn:
            query = sa.select(table.c.n, table.c.shard, table.c.fingerprint)
            found = {n: (shard, fp) for n, shard, fp in conn.execute(query)}
    truncated = {fp: -(-fp % 16) if fp < 0 else fp % 16 for _, _, fp in vectors.values()}
    assert found == {n: (truncated[fp], fp) for n, (_, _, fp) in vectors.items()}
    assert found[1][0] == -7  # MOD(FARM_FINGERPRINT('1footrue'), 16) on Spanner


def test_a_wrong_shard_id_given_by_hand_is_refused(engine: Engine, table: sa.Table) -> None:
    row = generated_rows(1)[0]
    right = SHARD.of(row["n"], row["s"], row["b"], row["ts"], row["d"])
    with own_engine(engine) as mine:
        fill_shard_columns(mine)
        with (
            pytest.raises(InvalidShardError, match=f"was given {right + 1}, but the row hashes"),
            mine.begin() as conn,
        ):
            conn.execute(sa.insert(table), {**row, "shard": right + 1})
        with (
            pytest.raises(InvalidShardError, match=f"was given {right + 1}, but the row hashes"),
            mine.begin() as conn,
        ):
            conn.execute(sa.insert(table).values(**row, shard=right + 1))
        with mine.begin() as conn:
            conn.execute(sa.insert(table), {**row, "shard": right})  # the right one is kept
    assert stored_shard_ids(engine, table) == {row["n"]: right}


# -- AsyncEngine ----------------------------------------------------------------------------


ASYNC_OPT_INS: dict[str, Callable[[AsyncDatabase], AsyncEngine]] = {
    "fill_shard_columns": lambda database: database.engine(),
    "plugins=": lambda database: create_async_engine(database.url, plugins=["seqkeys_shards"]),
    "not at all": lambda database: database.engine(),
}


@pytest.mark.parametrize("how", list(ASYNC_OPT_INS))
def test_an_async_engine_fills_the_shard_columns(async_database: AsyncDatabase, how: str) -> None:
    rows = generated_rows(30)
    metadata = sa.MetaData()
    table = shard_column_table(metadata, SHARD_TABLE)

    async def main() -> None:
        engine = ASYNC_OPT_INS[how](async_database)
        if how == "fill_shard_columns":
            fill_shard_columns(engine)
        try:
            async with engine.begin() as conn:
                await conn.run_sync(metadata.drop_all)
                await conn.run_sync(metadata.create_all)
            await conn_inserts(engine, table, rows)
        finally:
            await engine.dispose()

    try:
        if how == "not at all":
            with pytest.warns(DeprecationWarning, match=DEPRECATED) as caught:
                asyncio.run(main())
            assert [w.category for w in caught] == [DeprecationWarning]  # once
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                asyncio.run(main())
        assert stored_shard_ids(async_database.sync, table) == expected(rows)
    finally:
        metadata.drop_all(async_database.sync)


async def conn_inserts(engine: AsyncEngine, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    async with engine.begin() as conn:
        await conn.execute(sa.insert(table), rows[:20])
        await conn.execute(sa.insert(table).values(**rows[20]))
    mapper = registry()
    mapper.map_imperatively(Row, table)
    try:
        async with AsyncSession(engine) as session:
            session.add_all(Row(**r) for r in rows[21:30])
            await session.commit()
    finally:
        mapper.dispose()
