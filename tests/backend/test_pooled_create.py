"""Creating and dropping a pooled sequence: ``metadata.create_all``/``drop_all`` on every
engine, and the Alembic operations and autogenerate.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic.autogenerate import produce_migrations
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.engine import Engine

import sqlalchemy_seqkeys.alembic
from sqlalchemy_seqkeys import MigrationError, PooledSequence
from sqlalchemy_seqkeys.alembic.pooled_ops import CreatePooledSequenceOp
from sqlalchemy_seqkeys.sequences.table import read_next_value
from tests.backend._pooled import ROWS, TABLE, drop_everything, native

sqlalchemy_seqkeys.alembic.register()  # where Alembic has not loaded the plugin (not installed)

pytestmark = pytest.mark.backend


def test_create_all_and_drop_all_manage_the_sequence(engine: Engine) -> None:
    name = "seqkeys_pooled_md"
    drop_everything(engine, name)
    metadata = sa.MetaData()
    sequence = PooledSequence(name, batch_size=10, start=500, table=TABLE, metadata=metadata)
    try:
        metadata.create_all(engine)
        metadata.create_all(engine)  # checkfirst: nothing changes
        assert sequence.next_values(engine, 12) == list(range(500, 512))
        metadata.drop_all(engine)
        with engine.connect() as conn:
            if native(engine):
                assert not sa.inspect(conn).has_sequence(name)
            else:
                assert read_next_value(conn, name, table=TABLE) is None
        metadata.create_all(engine)  # created anew: its keys start afresh
        assert sequence.next_value(engine) == 500
    finally:
        drop_everything(engine, name)


def test_alembic_operations_and_autogenerate(engine: Engine) -> None:
    name = "seqkeys_pooled_ops"
    drop_everything(engine, name)
    declared = sa.MetaData()
    sequence = PooledSequence(name, batch_size=20, start=7, table=TABLE, metadata=declared)
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            opts = {
                "target_metadata": declared,
                "autogenerate_plugins": ["alembic.autogenerate.*", "seqkeys"],
            }
            context = MigrationContext.configure(conn, opts=opts)
            op = Operations(context)
            missing = [
                o
                for o in produce_migrations(context, declared).upgrade_ops.ops
                if isinstance(o, CreatePooledSequenceOp)
            ]
            assert [(o.name, o.allocation_size, o.start) for o in missing] == [(name, 20, 7)]
            if not native(engine):
                op.create_sequences_table(TABLE)
            op.create_pooled_sequence(name, 20, start=7, table=TABLE)
            with pytest.raises(MigrationError, match="already exists"):
                op.create_pooled_sequence(name, 20, table=TABLE)
            assert not [
                o
                for o in produce_migrations(context, declared).upgrade_ops.ops
                if isinstance(o, CreatePooledSequenceOp)
            ]
            assert sequence.next_values(conn, 3) == [7, 8, 9]
            op.create_table(ROWS, sa.Column("id", sa.BigInteger, primary_key=True))
            op.execute(sa.text(f"INSERT INTO {ROWS} (id) VALUES (1000)"))
            op.resync_pooled_sequence(name, ROWS, "id", sequences_table=TABLE)
            assert PooledSequence(name, batch_size=20, table=TABLE).next_value(conn) == 1001
            op.drop_pooled_sequence(name, 20, start=7, table=TABLE)
            with pytest.raises(MigrationError, match="nothing to drop"):
                op.drop_pooled_sequence(name, 20, table=TABLE)
    finally:
        drop_everything(engine, name)
