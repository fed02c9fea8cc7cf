"""An allocation that waited for a row another transaction replaced (dropped and created
anew, as a PostgreSQL migration does in one transaction) takes from the new row.

PostgreSQL's UPDATE found the row it waited for deleted and matched nothing; the
library then read the new row and, finding it present, called the sequence
exhausted (``SequenceExhaustedError`` for a sequence at 1, advising a new sequence).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    TableSequence,
    create_table_sequence,
    drop_table_sequence,
    sequences_table,
)
from tests._helpers import fresh_table

pytestmark = pytest.mark.backend

NAME = "seqkeys_replaced"


@pytest.fixture(params=["postgresql", "mysql"])
def server_engine(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    engine = sa.create_engine(engines.get(request.param).url)
    with fresh_table(engine, sequences_table):
        yield engine
    engine.dispose()


@pytest.mark.parametrize("mode", ["separate", "in_transaction", "batch"])
def test_an_allocation_waiting_for_a_replaced_row_takes_from_the_new_row(
    server_engine: Engine, mode: str
) -> None:
    sequence = TableSequence(NAME, mode=mode, batch_size=5)
    sequence.create(server_engine)
    assert sequence.next_values(server_engine, 3) == [1, 2, 3]
    other = TableSequence(NAME, mode=mode, batch_size=5)  # holds no block
    sent = threading.Event()

    def mark(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if threading.current_thread().name == "waiting" and "UPDATE" in statement.upper():
            sent.set()

    sa.event.listen(server_engine, "before_cursor_execute", mark)
    got: list[object] = []

    def take() -> None:
        try:
            got.append(other.next_value(server_engine))
        except Exception as exc:  # reported by the assertion below
            got.append(exc)

    with server_engine.connect() as migration:
        drop_table_sequence(migration, NAME)
        create_table_sequence(migration, NAME, start=100)
        thread = threading.Thread(target=take, name="waiting")
        thread.start()
        assert sent.wait(10)
        time.sleep(0.5)  # its UPDATE waits for the row this transaction holds
        migration.commit()
    thread.join(10)
    assert got == [100]  # was SequenceExhaustedError: "is at 100; a block of 5 would pass"
