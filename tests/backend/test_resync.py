"""``resync_table_sequence``: a sequence moved past a table's keys after an import, never back."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    SequenceMovedBackwardsError,
    SequenceNotFoundError,
    SequencesTableNotFoundError,
    TableSequence,
    create_table_sequence,
    resync_table_sequence,
    sequences_table,
)
from sqlalchemy_seqkeys.cli import main
from sqlalchemy_seqkeys.sequences.table import read_next_value
from tests._helpers import tenant_schemas

pytestmark = pytest.mark.backend

DATA = "seqkeys_resync_rows"


@pytest.fixture
def data(engine: Engine) -> Iterator[sa.Table]:
    """A sequences table and a table of rows, both fresh."""
    metadata = sa.MetaData()
    sequences_table(metadata)
    rows = sa.Table(
        DATA,
        metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("note", sa.String(20)),
    )
    metadata.drop_all(engine)
    metadata.create_all(engine)
    yield rows
    metadata.drop_all(engine)


def _import(engine: Engine, rows: sa.Table, keys: list[int]) -> None:
    with engine.begin() as conn:
        conn.execute(rows.insert(), [{"id": k, "note": "imported"} for k in keys])


def _next(engine: Engine, name: str) -> int | None:
    with engine.connect() as conn:
        return read_next_value(conn, name)


def test_resync_moves_past_the_imported_keys(engine: Engine, data: sa.Table) -> None:
    create_table_sequence(engine, "imported")
    _import(engine, data, [1, 7, 41])
    assert resync_table_sequence(engine, "imported", DATA, "id") == 42
    assert _next(engine, "imported") == 42
    # a Table works as well, and a second run changes nothing
    assert resync_table_sequence(engine, "imported", data, "id") == 42
    values = TableSequence("imported", mode="batch", batch_size=5).next_values(engine, 3)
    assert values == [42, 43, 44]


def test_resync_never_moves_backwards(engine: Engine, data: sa.Table) -> None:
    create_table_sequence(engine, "ahead", start=1000)
    _import(engine, data, [5, 6])
    assert resync_table_sequence(engine, "ahead", DATA, "id") == 1000
    create_table_sequence(engine, "empty_table", start=7)
    with engine.begin() as conn:
        conn.execute(sa.delete(data))
    assert resync_table_sequence(engine, "empty_table", DATA, "id") == 7  # no keys: as it was
    assert _next(engine, "ahead") == 1000


def test_resync_joins_the_callers_transaction(engine: Engine, data: sa.Table) -> None:
    create_table_sequence(engine, "in_txn")
    _import(engine, data, [99])
    with engine.connect() as conn:
        trans = conn.begin()
        assert resync_table_sequence(conn, "in_txn", DATA, "id") == 100
        trans.rollback()
    assert _next(engine, "in_txn") == 1


def test_resync_refusals(engine: Engine, data: sa.Table) -> None:
    with pytest.raises(SequenceNotFoundError, match="create_table_sequence"):
        resync_table_sequence(engine, "ghost", DATA, "id")
    with pytest.raises(SequencesTableNotFoundError):
        resync_table_sequence(engine, "ghost", DATA, "id", sequences_table="seqkeys_no_table")


def test_a_restored_row_is_refused_then_resync_lets_values_continue(
    engine: Engine, data: sa.Table
) -> None:
    """The whole story: rows inserted, the row restored from an old backup, resync."""
    create_table_sequence(engine, "restored")
    sequence = TableSequence("restored", mode="batch", batch_size=10)
    _import(engine, data, sequence.next_values(engine, 10))  # rows 1..10
    table = sequences_table(sa.MetaData())
    with engine.begin() as conn:  # the backup was taken when the row said 1
        conn.execute(sa.update(table).values(next_value=1))
    with pytest.raises(SequenceMovedBackwardsError, match="resync_table_sequence"):
        sequence.next_value(engine)
    assert resync_table_sequence(engine, "restored", DATA, "id") >= 11
    more = sequence.next_values(engine, 5)
    assert min(more) >= 11
    _import(engine, data, more)  # no key taken twice


def test_the_seqkeys_resync_command(
    engine: Engine, data: sa.Table, capsys: pytest.CaptureFixture[str]
) -> None:
    url = engine.url.render_as_string(hide_password=False)
    create_table_sequence(engine, "cli_seq")
    _import(engine, data, [1, 2, 3, 500])
    args = ["resync", "--url", url, "--sequence", "cli_seq", "--table", DATA, "--column", "id"]
    assert main(args) == 0
    assert "next value 501 (was 1)" in capsys.readouterr().out
    assert main(args) == 0
    assert "already past" in capsys.readouterr().out
    assert _next(engine, "cli_seq") == 501
    assert main([*args[:4], "ghost", *args[5:]]) == 1
    assert "SequenceNotFoundError" in capsys.readouterr().err


@pytest.fixture(params=["postgresql", "mysql"])
def server_data(request: pytest.FixtureRequest, engines: Any) -> Iterator[tuple[Engine, sa.Table]]:
    engine = engines.get(request.param)
    metadata = sa.MetaData()
    sequences_table(metadata)
    rows = sa.Table(DATA, metadata, sa.Column("id", sa.BigInteger, primary_key=True))
    metadata.drop_all(engine)
    metadata.create_all(engine)
    yield engine, rows
    metadata.drop_all(engine)


def test_resync_beside_concurrent_allocations(server_data: tuple[Engine, sa.Table]) -> None:
    """Allocations running while resyncs run: no value twice, the sequence never goes back."""
    engine, rows = server_data
    create_table_sequence(engine, "busy")
    _import(engine, rows, [5000])
    sequence = TableSequence("busy", mode="separate")
    taken: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def allocate() -> None:
        try:
            mine = [sequence.next_value(engine) for _ in range(60)]
        except BaseException as exc:  # reported below
            errors.append(exc)
            return
        with lock:
            taken.extend(mine)

    threads = [threading.Thread(target=allocate) for _ in range(3)]
    for t in threads:
        t.start()
    results = [resync_table_sequence(engine, "busy", DATA, "id") for _ in range(5)]
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(taken) == len(set(taken)) == 180
    assert results == sorted(results), "resync never moved the sequence back"
    assert results[0] >= 5001
    assert _next(engine, "busy") == max(max(taken), results[-1] - 1) + 1


def test_a_tenant_resyncs_from_its_own_table(pg_engine: Engine) -> None:
    """Under a schema_translate_map the MAX is read from the tenant's table, the row is its own."""
    with tenant_schemas(pg_engine, "seqkeys_resync_a", "seqkeys_resync_b") as (a, b):
        metadata = sa.MetaData()
        sequences_table(metadata)
        rows = sa.Table(
            DATA,
            metadata,
            sa.Column("id", sa.BigInteger, primary_key=True),
            sa.Column("note", sa.String(20)),
        )
        for tenant, keys in ((a, [5, 900]), (b, [3])):
            metadata.create_all(tenant)
            create_table_sequence(tenant, "imported")
            _import(tenant, rows, keys)
        assert resync_table_sequence(a, "imported", DATA, "id") == 901
        assert resync_table_sequence(b, "imported", rows, "id") == 4
        assert TableSequence("imported", mode="separate").next_value(a) == 901
        assert TableSequence("imported", mode="separate").next_value(b) == 4
