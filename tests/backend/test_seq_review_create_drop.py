"""Database errors of create()/drop() are SeqKeysErrors with the cause attached;
SQLite's "database is locked" is retried, bounded.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import (
    SequenceAllocationError,
    TableSequence,
)
from sqlalchemy_seqkeys.sequences.table import create_table_sequence
from tests.backend._seq_review import with_table

pytestmark = pytest.mark.backend


def test_sqlite_locked_create_and_drop_are_seqkeys_errors(lite: sa.Engine) -> None:
    table = with_table(lite)
    held = TableSequence("held", mode="batch")
    held.create(lite)
    holder = sa.create_engine(lite.url)
    try:
        with holder.connect() as conn:
            conn.execute(sa.update(table).values(next_value=table.c.next_value))  # write lock
            for call in (
                lambda: TableSequence("other", mode="batch").create(lite),
                lambda: held.drop(lite),
                lambda: held.create(lite, checkfirst=True),
            ):
                started = time.monotonic()
                with pytest.raises(SequenceAllocationError, match="locked") as info:
                    call()
                assert isinstance(info.value.__cause__, sa.exc.OperationalError)
                assert time.monotonic() - started > 0.2 * 2  # retried, not one wait
            conn.rollback()
    finally:
        holder.dispose()
    # once the lock is gone, each works
    assert TableSequence("other", mode="batch").create(lite)
    assert held.drop(lite)


def test_sqlite_locked_create_retries_until_the_lock_is_gone(lite: sa.Engine) -> None:
    import threading

    table = with_table(lite)
    TableSequence("first", mode="batch").create(lite)
    holder = sa.create_engine(lite.url)
    locked = threading.Event()

    def hold() -> None:
        with holder.connect() as conn:
            conn.execute(sa.update(table).values(next_value=table.c.next_value))
            locked.set()
            time.sleep(0.5)
            conn.rollback()

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        locked.wait(5)
        assert TableSequence("second", mode="batch").create(lite)
    finally:
        thread.join()
        holder.dispose()


@pytest.mark.parametrize(
    ("name", "statement"),
    [
        ("postgresql", "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY"),
        ("mysql", "SET SESSION TRANSACTION READ ONLY"),
    ],
)
def test_read_only_session_create_and_drop_are_seqkeys_errors(
    engines: Any, name: str, statement: str
) -> None:
    with engines.fresh_database(name, "seq_review_ro") as url:
        writer = sa.create_engine(url)
        with_table(writer)
        TableSequence("ro", mode="batch").create(writer)
        reader = sa.create_engine(url)

        @sa.event.listens_for(reader, "connect")
        def read_only(dbapi_connection: Any, record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute(statement)
            cursor.close()
            dbapi_connection.commit()

        try:
            for call, outcome in (
                (lambda: TableSequence("ro2", mode="batch").create(reader), "not created"),
                (lambda: TableSequence("ro", mode="batch").drop(reader), "not dropped"),
            ):
                with pytest.raises(SequenceAllocationError, match=outcome) as info:
                    call()
                assert isinstance(info.value.__cause__, sa.exc.DBAPIError)
            with reader.connect() as conn, pytest.raises(SequenceAllocationError, match="roll"):
                create_table_sequence(conn, "ro3")
        finally:
            reader.dispose()
            writer.dispose()


def test_sqlite_locked_create_async_on_an_async_engine_is_retried(tmp_path: Path) -> None:
    import asyncio

    from sqlalchemy.ext.asyncio import create_async_engine

    path = tmp_path / "async.db"
    sync = sa.create_engine(f"sqlite:///{path}")
    table = with_table(sync)

    async def main() -> None:
        engine = create_async_engine(f"sqlite+aiosqlite:///{path}", connect_args={"timeout": 0.2})
        held = TableSequence("held", mode="batch")
        await held.create_async(engine)
        try:
            with sync.connect() as conn:
                conn.execute(sa.update(table).values(next_value=table.c.next_value))
                for call in (
                    lambda: TableSequence("other", mode="batch").create_async(engine),
                    lambda: held.drop_async(engine),
                ):
                    started = time.monotonic()
                    with pytest.raises(SequenceAllocationError, match="locked") as info:
                        await call()
                    assert "caller's transaction" not in str(info.value)
                    assert time.monotonic() - started > 0.2 * 2  # retried, not one wait
                conn.rollback()
            assert await held.drop_async(engine)
        finally:
            await engine.dispose()

    try:
        asyncio.run(main())
    finally:
        sync.dispose()
