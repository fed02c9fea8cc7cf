"""What a resync reports when another process moves the sequence in its window.

Another process takes a block between the resync's first read and its UPDATE:
the UPDATE then matches no row, and the value returned (and printed by
``seqkeys resync``) must be the committed one, not a REPEATABLE READ snapshot's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import create_table_sequence, resync_table_sequence, sequences_table
from sqlalchemy_seqkeys.cli import main
from sqlalchemy_seqkeys.sequences.table import read_next_value

pytestmark = pytest.mark.backend

DATA = "seqkeys_resync_report_rows"
TAKEN = 1000  # the block the other process takes


@pytest.fixture(params=["postgresql", "mysql"])
def imported(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    """A server engine with sequence ``inv`` at 1 and keys 1..500 imported."""
    engine = engines.get(request.param)
    metadata = sa.MetaData()
    sequences_table(metadata)
    rows = sa.Table(DATA, metadata, sa.Column("id", sa.BigInteger, primary_key=True))
    metadata.drop_all(engine)
    metadata.create_all(engine)
    create_table_sequence(engine, "inv")
    with engine.begin() as conn:
        conn.execute(rows.insert(), [{"id": i} for i in range(1, 501)])
    yield engine
    metadata.drop_all(engine)


def _takes_a_block_before(imported: Engine, starts: str) -> Iterator[list[int]]:
    """Just before a statement that starts with ``starts`` runs, another connection takes a
    block and commits.

    Hooked on every Engine (``seqkeys resync`` makes its own); fires once, and the
    list it yields says whether it fired.
    """
    fired: list[int] = []

    def before_update(conn: sa.Connection, cursor: Any, statement: str, *args: Any) -> None:
        if fired or not " ".join(statement.split()).upper().startswith(starts):
            return
        fired.append(1)
        with imported.connect() as other:  # another pooled connection, committed now
            other.execute(
                sa.text("UPDATE sequences SET next_value = next_value + :n WHERE name = 'inv'"),
                {"n": TAKEN},
            )
            other.commit()

    event.listen(sa.engine.Engine, "before_cursor_execute", before_update)
    try:
        yield fired
    finally:
        event.remove(sa.engine.Engine, "before_cursor_execute", before_update)


@pytest.fixture
def other_process_takes_a_block(imported: Engine) -> Iterator[list[int]]:
    """Another connection takes a block between the resync's first read and its UPDATE."""
    yield from _takes_a_block_before(imported, "UPDATE SEQUENCES")


@pytest.fixture
def other_process_takes_a_block_first(imported: Engine) -> Iterator[list[int]]:
    """Another connection takes a block just before ``seqkeys resync`` reads the sequence.

    The command reads it locked (``FOR UPDATE``) and then moves it: no other
    process can take a block between the two any more, only before (or after).
    """
    yield from _takes_a_block_before(imported, "SELECT SEQUENCES.NEXT_VALUE")


def _stored(engine: Engine) -> int | None:
    with engine.connect() as conn:
        return read_next_value(conn, "inv")


def test_in_a_transaction_that_read_first_the_committed_value_is_returned(
    imported: Engine, other_process_takes_a_block: list[int]
) -> None:
    with imported.begin() as conn:
        before = read_next_value(conn, "inv")  # MariaDB's snapshot starts here
        after = resync_table_sequence(conn, "inv", DATA, "id")
    assert other_process_takes_a_block == [1]
    assert before == 1
    assert after == _stored(imported) == 1 + TAKEN


def test_with_an_engine_the_committed_value_is_returned(
    imported: Engine, other_process_takes_a_block: list[int]
) -> None:
    assert resync_table_sequence(imported, "inv", DATA, "id") == 1 + TAKEN
    assert other_process_takes_a_block == [1]
    assert _stored(imported) == 1 + TAKEN


def test_the_command_prints_the_committed_value(
    imported: Engine,
    other_process_takes_a_block_first: list[int],
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = imported.url.render_as_string(hide_password=False)
    args = ["resync", "--url", url, "--sequence", "inv", "--table", DATA, "--column", "id"]
    assert main(args) == 0
    assert other_process_takes_a_block_first == [1]
    out = capsys.readouterr().out
    assert f"next value {1 + TAKEN}, already past" in out, out
    assert "next value 1," not in out, out
    assert _stored(imported) == 1 + TAKEN
