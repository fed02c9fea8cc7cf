"""What the database holds but is not valid, on every engine: a SeqKeysError, never a raw error.

- A ``CombGuid`` column holding a value this type did not write (text that is
  no GUID, bytes of the wrong length): reading it raises ``InvalidGuidError``
  naming the table and column, or the engine refuses to store it at all.
  Before, reading it raised a bare ``ValueError`` from ``uuid.UUID``.
- A resync (table sequence or pooled) whose data table or column does not
  exist: ``InvalidSequenceError`` saying which, and the sequence is not moved.
  Before, the driver's own error came out (``ProgrammingError``,
  ``OperationalError``, ...).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    CombGuid,
    InvalidGuidError,
    InvalidSequenceError,
    PooledSequence,
    create_table_sequence,
    resync_pooled_sequence,
    resync_table_sequence,
    sequences_table,
)
from sqlalchemy_seqkeys.sequences.table import read_next_value

pytestmark = pytest.mark.backend

GUIDS = "seqkeys_bad_guids"
ROWS = "seqkeys_bad_resync_rows"

#: a CombGuid form, the plain type that writes past it, and what that writes
FORMS = {
    "text": (CombGuid(), sa.String(36), ["garbage", "0" * 36]),
    "binary": (CombGuid(binary=True), sa.LargeBinary(16), [b"\x01" * 15, b"\x01" * 3]),
}


@pytest.mark.parametrize("form", list(FORMS))
def test_reading_a_stored_value_that_is_no_guid_names_the_column(engine: Engine, form: str) -> None:
    guid_type, raw_type, garbage = FORMS[form]
    typed = sa.Table(GUIDS, sa.MetaData(), sa.Column("id", guid_type, primary_key=True))
    # the same table as a plain column: writes what CombGuid would refuse
    raw = sa.Table(GUIDS, sa.MetaData(), sa.Column("id", raw_type, primary_key=True))
    typed.drop(engine, checkfirst=True)
    typed.create(engine)
    try:
        for value in garbage:
            with engine.begin() as conn:
                conn.execute(raw.delete())
            try:
                with engine.begin() as conn:
                    conn.execute(raw.insert().values(id=value))
            except sa.exc.DBAPIError:
                continue  # the column's own type refused it (PostgreSQL's uuid): nothing to read
            with engine.connect() as conn:
                held = conn.execute(sa.select(raw.c.id)).scalar_one()
            if isinstance(held, bytes) and len(held) == 16:  # MySQL's BINARY(16) pads: a GUID
                with engine.connect() as conn:
                    assert conn.execute(sa.select(typed.c.id)).scalar_one().bytes == held
                continue
            for query in (sa.select(typed.c.id), sa.select(typed)):
                expected = pytest.raises(InvalidGuidError, match=rf"column {GUIDS}\.id")
                with engine.connect() as conn, expected as raised:
                    conn.execute(query).all()
                assert "not a GUID" in str(raised.value)
    finally:
        typed.drop(engine, checkfirst=True)


@pytest.fixture
def sequences(engine: Engine) -> Iterator[sa.Table]:
    metadata = sa.MetaData()
    sequences_table(metadata)
    rows = sa.Table(ROWS, metadata, sa.Column("id", sa.BigInteger, primary_key=True))
    metadata.drop_all(engine)
    metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(rows.insert(), [{"id": 5000}])
    yield rows
    metadata.drop_all(engine)


@pytest.mark.parametrize(
    ("table", "column", "says"),
    [
        ("seqkeys_no_such_table", "id", "there is no table 'seqkeys_no_such_table'"),
        (ROWS, "no_such_column", f"table '{ROWS}' has no column 'no_such_column'"),
    ],
    ids=["missing table", "missing column"],
)
def test_resync_from_a_missing_table_or_column_is_a_seqkeys_error(
    engine: Engine, sequences: sa.Table, table: str, column: str, says: str
) -> None:
    create_table_sequence(engine, "seqkeys_bad_resync")
    with pytest.raises(InvalidSequenceError, match=says) as raised:
        resync_table_sequence(engine, "seqkeys_bad_resync", table, column)
    assert isinstance(raised.value.__cause__, sa.exc.DBAPIError)  # the driver's error kept
    with engine.connect() as conn:
        assert read_next_value(conn, "seqkeys_bad_resync") == 1  # not moved


@pytest.mark.parametrize(
    ("table", "column", "says"),
    [
        ("seqkeys_no_such_table", "id", "there is no table 'seqkeys_no_such_table'"),
        (ROWS, "no_such_column", f"table '{ROWS}' has no column 'no_such_column'"),
    ],
    ids=["missing table", "missing column"],
)
def test_pooled_resync_from_a_missing_table_or_column_is_a_seqkeys_error(
    engine: Engine, sequences: sa.Table, table: str, column: str, says: str
) -> None:
    order_id = PooledSequence("seqkeys_bad_pooled", batch_size=50)
    order_id.create(engine, checkfirst=True)
    try:
        with pytest.raises(InvalidSequenceError, match=says):
            resync_pooled_sequence(engine, "seqkeys_bad_pooled", table, column)
        assert order_id.next_value(engine) == 1  # not moved
    finally:
        order_id.drop(engine, checkfirst=True)
