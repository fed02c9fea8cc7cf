"""``seqkeys resync`` says it moved a sequence only when it did: an allocation that another
transaction commits while the command runs is not reported as the command's move."""

from __future__ import annotations

import threading
import time

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import TableSequence, sequences_table
from sqlalchemy_seqkeys.cli import main

pytestmark = pytest.mark.backend

#: a lock wait of another session, as each server shows it
WAITING = {
    "postgresql": "SELECT count(*) FROM pg_locks WHERE NOT granted",
    "mysql": "SELECT count(*) FROM information_schema.innodb_trx WHERE trx_state = 'LOCK WAIT'",
}


@pytest.mark.parametrize("name", ["postgresql", "mysql"])
def test_a_concurrent_allocation_is_not_reported_as_the_resyncs_move(
    name: str, engines: object, capsys: pytest.CaptureFixture[str]
) -> None:
    engine: Engine = engines.get(name)  # type: ignore[attr-defined]
    metadata = sa.MetaData()
    sequences_table(metadata)
    keys = sa.Table("rr_keys", metadata, sa.Column("id", sa.BigInteger, primary_key=True))
    metadata.create_all(engine)
    sequence = TableSequence("rr_seq", mode="in_transaction", start=10)
    sequence.drop(engine, checkfirst=True)
    sequence.create(engine)
    try:
        with engine.begin() as conn:
            conn.execute(keys.delete())
            conn.execute(keys.insert(), [{"id": 5}])  # the sequence (10) is past MAX (5)
        url = engine.url.render_as_string(hide_password=False)
        argv = ["resync", "--url", url, "--sequence", "rr_seq", "--table", "rr_keys"]
        statuses: list[int] = []
        with engine.connect() as other:
            other.begin()
            assert sequence.next_value(other) == 10  # the row now says 11, locked
            command = threading.Thread(
                target=lambda: statuses.append(main([*argv, "--column", "id"]))
            )
            command.start()
            with engine.connect() as watch:
                deadline = time.monotonic() + 20
                while not watch.scalar(sa.text(WAITING[name])) and time.monotonic() < deadline:
                    watch.rollback()
                    time.sleep(0.05)
            other.commit()  # the allocation lands while the command waits on the row
            command.join(30)
        assert statuses == [0]
        said = capsys.readouterr().out
        assert "next value 11, already past MAX(rr_keys.id); left as it was" in said, said
    finally:
        sequence.drop(engine, checkfirst=True)
        keys.drop(engine, checkfirst=True)
