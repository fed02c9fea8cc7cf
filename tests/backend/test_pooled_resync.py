"""resync_pooled_sequence: past imported keys and never back, after a sequence moved back by
hand, and holding ``nextval`` back until its transaction ends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from sqlalchemy_seqkeys import (
    PooledSequence,
    SequenceMovedBackwardsError,
    SequenceNotFoundError,
    resync_pooled_sequence,
)
from tests.backend._pooled import ROWS, SIZE, TABLE, all_ids, drop_everything, execute

pytestmark = pytest.mark.backend


def test_resync_moves_past_imported_keys_and_never_back(
    engine: Engine, declare: Callable[..., tuple[PooledSequence, type[Any]]]
) -> None:
    name = "seqkeys_pooled_resync"
    _, row = declare(name)
    with Session(engine) as session:
        session.add_all(row(note="before") for _ in range(5))  # holds the rest of 1 .. 50
        session.commit()
    with engine.begin() as conn:  # an import, keys included
        conn.execute(sa.text(f"INSERT INTO {ROWS} (id, note) VALUES (900, 'i'), (4321, 'i')"))
    assert resync_pooled_sequence(engine, name, ROWS, "id", sequences_table=TABLE) == 4322
    with Session(engine) as session:
        session.add_all(row(note="after") for _ in range(60))  # 6 .. 50, then 4322 ..
        session.commit()
    ids = all_ids(engine)
    assert len(ids) == len(set(ids)) == 67
    assert ids[-1] == 4322 + 14
    assert resync_pooled_sequence(engine, name, ROWS, "id", sequences_table=TABLE) is None
    with pytest.raises(SequenceNotFoundError):
        resync_pooled_sequence(engine, "seqkeys_pooled_none", ROWS, "id", sequences_table=TABLE)


def test_a_sequence_moved_back_is_refused_until_resynced(native_engine: Engine) -> None:
    name = "seqkeys_pooled_native"
    sequence = PooledSequence(name, batch_size=SIZE, table=TABLE)
    sequence.create(native_engine)
    taken = sequence.next_values(native_engine, SIZE + 10)  # blocks 1 and 51
    execute(native_engine, f"ALTER SEQUENCE {name} RESTART")  # back to 1, by hand
    assert sequence.next_values(native_engine, SIZE - 10) == list(range(61, 101))
    with pytest.raises(SequenceMovedBackwardsError, match="moved backwards"):
        sequence.next_value(native_engine)
    with native_engine.begin() as conn:
        conn.execute(sa.text(f"CREATE TABLE {ROWS} (id BIGINT PRIMARY KEY)"))
        conn.execute(sa.text(f"INSERT INTO {ROWS} (id) VALUES (100)"))
    assert resync_pooled_sequence(native_engine, name, ROWS, "id") == 101
    assert sequence.next_value(native_engine) == 101
    assert taken == list(range(1, 61))


def test_resync_holds_nextval_back_until_its_transaction_ends(pg_engine: Engine) -> None:
    """No block can be taken between reading the sequence and moving it (ALTER's lock)."""
    name = "seqkeys_pooled_native"
    drop_everything(pg_engine, name)
    sequence = PooledSequence(name, batch_size=SIZE, table=TABLE)
    sequence.create(pg_engine)
    try:
        execute(pg_engine, f"CREATE TABLE {ROWS} (id BIGINT PRIMARY KEY)")
        execute(pg_engine, f"INSERT INTO {ROWS} (id) VALUES (500)")
        with pg_engine.connect() as conn, conn.begin():
            assert resync_pooled_sequence(conn, name, ROWS, "id") == 501
            with pg_engine.connect() as other:
                other.execute(sa.text("SET lock_timeout = '200ms'"))
                with pytest.raises(sa.exc.OperationalError, match="lock timeout"):
                    other.scalar(sa.select(sa.Sequence(name).next_value()))
        assert sequence.next_value(pg_engine) == 501
    finally:
        drop_everything(pg_engine, name)
