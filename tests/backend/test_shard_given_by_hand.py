"""A shard id given by hand: the right one is taken, a wrong one is InvalidShardError, everywhere.

One configuration serves every engine: on Spanner the server computes the generated column and
refuses any value for it, so a right value given by hand is left out of the INSERT (the server
computes the same), and a wrong one raises InvalidShardError before anything is sent, as on the
engines where the library fills the column. Core executemany, one row as parameters,
``.values(...)`` and the ORM; an engine that opted in and one that did not.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, registry

from sqlalchemy_seqkeys import InvalidShardError, ShardId, fill_shard_columns
from tests._helpers import fresh_tables
from tests._shard_fixtures import (
    SHARD_TABLE,
    Row,
    shard_table,  # noqa: F401 - the table fixture
    stored_shard_ids,
)
from tests.backend.test_shard_orm import generated_rows, own_engine, shard_column_table

pytestmark = pytest.mark.backend

SHARD = ShardId("n", "s", "b", "ts", "d", shards=2048)


def right(row: dict[str, Any]) -> int:
    return SHARD.of(row["n"], row["s"], row["b"], row["ts"], row["d"])


@pytest.fixture
def mine(engine: Engine) -> Iterator[Engine]:
    """An engine of the test's own on the suite's database, opted in."""
    with own_engine(engine) as made:
        fill_shard_columns(made)
        yield made


def test_the_right_shard_id_given_by_hand_is_taken(mine: Engine, table: sa.Table) -> None:
    rows = generated_rows(12)
    given = [{**r, "shard": right(r)} for r in rows]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with mine.begin() as conn:
            conn.execute(sa.insert(table), given[:5])  # executemany
            conn.execute(sa.insert(table), given[5])  # one row
            conn.execute(sa.insert(table).values(**given[6]))
            # some rows given one, others not
            conn.execute(sa.insert(table), [given[7], rows[8], {**rows[9], "shard": None}])
        mapper = registry()
        mapper.map_imperatively(Row, table)
        try:
            with Session(mine) as session:
                session.add_all([Row(**given[10]), Row(**given[11])])
                session.commit()
        finally:
            mapper.dispose()
    assert stored_shard_ids(mine, table) == {r["n"]: right(r) for r in rows}


def test_a_wrong_shard_id_given_by_hand_is_refused_everywhere(
    mine: Engine, table: sa.Table
) -> None:
    rows = generated_rows(4)
    wrong = {**rows[0], "shard": right(rows[0]) + 1}
    match = f"was given {right(rows[0]) + 1}, but the row hashes to {right(rows[0])}"
    attempts = {
        "executemany": lambda conn: conn.execute(sa.insert(table), [rows[1], wrong]),
        "one row": lambda conn: conn.execute(sa.insert(table), wrong),
        ".values()": lambda conn: conn.execute(sa.insert(table).values(**wrong)),
    }
    for how, attempt in attempts.items():
        with pytest.raises(InvalidShardError, match=match), mine.begin() as conn:
            attempt(conn)
        assert stored_shard_ids(mine, table) == {}, how
    mapper = registry()
    mapper.map_imperatively(Row, table)
    try:
        with Session(mine) as session:
            session.add(Row(**wrong))
            with pytest.raises(InvalidShardError, match=match):
                session.commit()
    finally:
        mapper.dispose()
    assert stored_shard_ids(mine, table) == {}


def test_a_given_shard_id_needs_the_hashed_columns(mine: Engine, table: sa.Table) -> None:
    row = generated_rows(1)[0]
    partial = {k: v for k, v in row.items() if k != "s"}
    with (
        pytest.raises(InvalidShardError, match="hashes column 's', which has no value"),
        mine.begin() as conn,
    ):
        conn.execute(sa.insert(table), {**partial, "shard": right(row)})


def test_an_engine_that_did_not_opt_in_checks_too_and_warns(
    engine: Engine, table: sa.Table
) -> None:
    rows = generated_rows(3)
    with own_engine(engine) as old:
        with pytest.raises(InvalidShardError, match="was given"), old.begin() as conn:
            conn.execute(sa.insert(table), {**rows[0], "shard": right(rows[0]) + 1})
        with pytest.warns(DeprecationWarning, match="did not opt in"), old.begin() as conn:
            conn.execute(sa.insert(table), [{**r, "shard": right(r)} for r in rows])
    assert stored_shard_ids(engine, table) == {r["n"]: right(r) for r in rows}


def test_a_values_insert_spanner_cannot_rebuild_is_refused(spanner_engine: Engine) -> None:
    """``.values(...)`` with more than its values (RETURNING): the shard id cannot be left out
    without losing the rest, so the right one is refused too, saying what to do."""
    metadata = sa.MetaData()
    table = shard_column_table(metadata, SHARD_TABLE)
    row = generated_rows(1)[0]
    with own_engine(spanner_engine) as mine, fresh_tables(mine, metadata):
        fill_shard_columns(mine)
        statement = sa.insert(table).values(**row, shard=right(row)).returning(table.c.n)
        with (
            pytest.raises(InvalidShardError, match="leave the shard column out"),
            mine.begin() as conn,
        ):
            conn.execute(statement)
        with mine.begin() as conn:  # left out: the server computes it
            conn.execute(sa.insert(table).values(**row).returning(table.c.n))
        assert stored_shard_ids(mine, table) == {row["n"]: right(row)}


@pytest.mark.parametrize("form", ["dicts", "tuples"])
def test_a_multi_row_values_insert_with_shard_ids_is_refused_with_what_to_do(
    mine: Engine, table: sa.Table, form: str
) -> None:
    """``insert(t).values([...])`` giving shard ids: refused before anything is sent (the
    library neither checks nor leaves them out there), never the server's raw refusal."""
    rows = [{**r, "shard": right(r)} for r in generated_rows(2)]
    given: list[Any] = rows
    if form == "tuples":
        given = [tuple(r[c.key] for c in table.c) for r in rows]
    with pytest.raises(InvalidShardError, match="pass the rows as parameters"), mine.begin() as c:
        c.execute(sa.insert(table).values(given))
    assert stored_shard_ids(mine, table) == {}
