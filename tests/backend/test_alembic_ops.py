"""The seqkeys Alembic operations on a live engine: bad input fails before anything changes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.engine import Engine

import sqlalchemy_seqkeys.alembic  # noqa: F401 (registers the operations)
from sqlalchemy_seqkeys import (
    InvalidBitReversalError,
    MigrationError,
    bit_reversed_sequence,
    reverse_bits,
)
from sqlalchemy_seqkeys.sequences.table import read_next_value

pytestmark = pytest.mark.backend


@pytest.fixture
def op(engine: Engine) -> Iterator[Operations]:
    """Alembic's ``op`` on an autocommit connection (Spanner's DDL is not transactional)."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        for table in ("seqkeys_ops_sequences", "seqkeys_ops_workers"):
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))
        bit_reversed_sequence("seqkeys_ops_br", table="seqkeys_ops_sequences").drop(
            conn, checkfirst=True
        )
        yield Operations(MigrationContext.configure(conn))
        for table in ("seqkeys_ops_sequences", "seqkeys_ops_workers"):
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))
        bit_reversed_sequence("seqkeys_ops_br", table="seqkeys_ops_sequences").drop(
            conn, checkfirst=True
        )


TABLE = "seqkeys_ops_sequences"


def test_operations_and_their_refusals(op: Operations, engine: Engine) -> None:
    conn = op.get_bind()
    with pytest.raises(MigrationError, match=r"run op.create_sequences_table\('seqkeys_ops_seq"):
        op.create_table_sequence("invoice_no", start=1000, table=TABLE)
    assert not sa.inspect(conn).has_table(TABLE)

    op.create_sequences_table(TABLE)
    with pytest.raises(MigrationError, match="already exists; nothing was created"):
        op.create_sequences_table(TABLE)

    op.create_table_sequence("invoice_no", start=1000, table=TABLE)
    with pytest.raises(MigrationError, match="'invoice_no' already exists"):
        op.create_table_sequence("invoice_no", start=5, table=TABLE)
    assert read_next_value(conn, "invoice_no", table=TABLE) == 1000  # left as it was

    with pytest.raises(MigrationError, match="'nope' does not exist"):
        op.drop_table_sequence("nope", table=TABLE)
    with pytest.raises(MigrationError, match="start must be an int"):
        op.create_table_sequence("bad", start=-1, table=TABLE)
    with pytest.raises(InvalidBitReversalError, match="skip_range"):
        op.create_bit_reversed_sequence("bad", skip_range=(5, 1))

    op.create_bit_reversed_sequence(
        "seqkeys_ops_br", start_with_counter=7, skip_range=(1, 10), table=TABLE
    )
    with pytest.raises(MigrationError, match="already exists"):
        op.create_bit_reversed_sequence("seqkeys_ops_br", table=TABLE)
    sequence = bit_reversed_sequence("seqkeys_ops_br", start_with_counter=7, table=TABLE)
    assert sequence.next_value(engine) == reverse_bits(7)
    op.drop_bit_reversed_sequence("seqkeys_ops_br", table=TABLE)
    with pytest.raises(MigrationError, match="nothing to drop"):
        op.drop_bit_reversed_sequence("seqkeys_ops_br", table=TABLE)

    op.create_worker_lease_table("seqkeys_ops_workers")
    with pytest.raises(MigrationError, match="already exists"):
        op.create_worker_lease_table("seqkeys_ops_workers")
    op.drop_worker_lease_table("seqkeys_ops_workers")
    with pytest.raises(MigrationError, match="no worker-lease table"):
        op.drop_worker_lease_table("seqkeys_ops_workers")

    op.drop_table_sequence("invoice_no", table=TABLE)
    op.drop_sequences_table(TABLE)
    assert not sa.inspect(conn).has_table(TABLE)
    with pytest.raises(MigrationError, match="no sequences table"):
        op.drop_sequences_table(TABLE)
