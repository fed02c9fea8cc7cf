"""PooledSequence checks the native sequence in the catalog before it hands out a key: a
changed increment, a sequence made by another tool, a cycling one and a block past BIGINT are
refused (PostgreSQL 15 and 18, MariaDB).
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from sqlalchemy_seqkeys import (
    PooledSequence,
    PooledSequenceMismatchError,
    SequenceExhaustedError,
    SequenceNotFoundError,
)
from tests.backend._pooled import ROWS, SIZE, TABLE, execute, make_model

pytestmark = pytest.mark.backend


def raw_nextval(engine: Engine, name: str) -> int:
    with engine.connect() as conn:
        return int(conn.scalar(sa.select(sa.Sequence(name).next_value())))


def test_a_changed_increment_is_refused_and_nothing_is_handed_out(native_engine: Engine) -> None:
    name = "seqkeys_pooled_native"
    PooledSequence(name, batch_size=SIZE, table=TABLE).create(native_engine)
    execute(native_engine, f"ALTER SEQUENCE {name} INCREMENT BY 7")  # by hand
    sequence = PooledSequence(name, batch_size=SIZE, table=TABLE)
    row, metadata = make_model(sequence)
    metadata.create_all(native_engine, checkfirst=True)
    message = r"INCREMENT BY 7 in the database, .* declares batch_size=50"
    with pytest.raises(PooledSequenceMismatchError, match=message):
        sequence.next_value(native_engine)
    with Session(native_engine) as session:
        session.add(row(note="refused"))
        # SQLAlchemy wraps what a column default raises, keeping it as .orig
        with pytest.raises(sa.exc.StatementError, match=message) as raised:
            session.commit()
        assert isinstance(raised.value.orig, PooledSequenceMismatchError)
    assert raw_nextval(native_engine, name) == 1  # no nextval was taken: nothing handed out
    execute(native_engine, f"ALTER SEQUENCE {name} INCREMENT BY {SIZE}")
    first = sequence.next_value(native_engine)  # a refusal is not remembered
    assert first > 1
    assert sequence.next_values(native_engine, SIZE - 1) == list(range(first + 1, first + SIZE))


def test_a_sequence_made_by_another_tool_is_refused(native_engine: Engine) -> None:
    execute(native_engine, "CREATE SEQUENCE seqkeys_pooled_plain")  # INCREMENT BY 1
    with pytest.raises(PooledSequenceMismatchError, match="INCREMENT BY 1 in the database"):
        PooledSequence("seqkeys_pooled_plain", batch_size=SIZE).next_value(native_engine)
    execute(native_engine, "DROP SEQUENCE seqkeys_pooled_plain")
    execute(native_engine, f"CREATE SEQUENCE seqkeys_pooled_plain INCREMENT BY {SIZE} CYCLE")
    with pytest.raises(PooledSequenceMismatchError, match="cycles"):
        PooledSequence("seqkeys_pooled_plain", batch_size=SIZE).next_value(native_engine)
    with pytest.raises(SequenceNotFoundError, match=r"op\.create_pooled_sequence"):
        PooledSequence("seqkeys_pooled_absent", batch_size=SIZE).next_value(native_engine)


def test_a_block_past_bigint_is_refused(native_engine: Engine) -> None:
    name = "seqkeys_pooled_native"
    start = 2**63 - 1 - 60
    sequence = PooledSequence(name, batch_size=SIZE, start=start, table=TABLE)
    sequence.create(native_engine)
    assert sequence.next_values(native_engine, SIZE) == list(range(start, start + SIZE))
    # the next nextval returns 2**63 - 11: its block would pass 2**63 - 1
    with pytest.raises(SequenceExhaustedError, match="would pass the BIGINT maximum"):
        sequence.next_value(native_engine)
    # then the sequence itself has no value left (PostgreSQL 2200H, MariaDB 4084)
    with pytest.raises(SequenceExhaustedError, match="no value left"):
        sequence.next_value(native_engine)


def test_a_resync_past_the_sequences_maxvalue_is_refused_and_changes_nothing(
    native_engine: Engine,
) -> None:
    """Keys past the sequence's MAXVALUE: the resync says so and changes nothing (PostgreSQL's
    setval refuses; MariaDB's SETVAL would move it there, to a sequence with no value left,
    and return that value as if it were the next key)."""
    from sqlalchemy_seqkeys import resync_pooled_sequence

    name = "seqkeys_pooled_native"
    sequence = PooledSequence(name, SIZE, table=TABLE)
    row_cls, metadata = make_model(sequence)
    metadata.create_all(native_engine)
    execute(native_engine, f"ALTER SEQUENCE {name} MAXVALUE 1000")
    with Session(native_engine) as session:
        session.add(row_cls(id=5000, note="imported"))
        session.commit()
    with pytest.raises(SequenceExhaustedError, match=r"past the MAXVALUE .*NO MAXVALUE"):
        resync_pooled_sequence(native_engine, name, ROWS, "id")
    assert raw_nextval(native_engine, name) == 1  # nothing was changed
    # keys up to MAXVALUE still move it, and its values follow the table's keys
    with Session(native_engine) as session:
        session.get(row_cls, 5000).id = 700
        session.commit()
    assert resync_pooled_sequence(native_engine, name, ROWS, "id") == 701
