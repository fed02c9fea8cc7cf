"""PooledSequence on MySQL, which has no sequences: the sequences table (MariaDB plays MySQL,
its dialect told it has none).
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from sqlalchemy_seqkeys import PooledSequence, resync_pooled_sequence
from sqlalchemy_seqkeys.sequences.table import read_next_value
from tests.backend._pooled import (
    ROWS,
    SIZE,
    TABLE,
    all_ids,
    counting,
    drop_everything,
    make_model,
    native,
)

pytestmark = pytest.mark.backend


def test_mysql_without_sequences_uses_the_sequences_table(mysql_engine: Engine) -> None:
    """MySQL has no sequences. MariaDB plays it: its dialect is told it has none."""
    engine = sa.create_engine(mysql_engine.url)
    with engine.connect():
        pass  # the dialect learns the server version (and that MariaDB has sequences) here
    engine.dialect.supports_sequences = False  # as MySQL 8's dialect says
    name = "seqkeys_pooled_mysql"
    drop_everything(engine, name)
    try:
        assert not native(engine)
        sequence = PooledSequence(name, batch_size=SIZE, table=TABLE)
        row, metadata = make_model(sequence)
        metadata.create_all(engine)
        with counting(engine) as counts, Session(engine) as session:
            session.add_all(row(note="m") for _ in range(120))
            session.commit()
        assert all_ids(engine) == list(range(1, 121))
        assert counts["blocks"] == 3
        with engine.connect() as conn:
            assert read_next_value(conn, name, table=TABLE) == 151
        assert not sa.inspect(mysql_engine).has_sequence(name)
        assert resync_pooled_sequence(engine, name, ROWS, "id", sequences_table=TABLE) is None
    finally:
        drop_everything(engine, name)
        engine.dispose()
