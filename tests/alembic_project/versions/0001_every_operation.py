"""every seqkeys operation, for the offline SQL snapshots

Revision ID: 0001
Revises:
Create Date: 2026-11-22 00:00:00

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import sqlalchemy_seqkeys

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_sequences_table()
    op.create_table_sequence("invoice_no", start=1000)
    op.create_bit_reversed_sequence("order_id", start_with_counter=1000, skip_range=(1, 99999))
    op.create_worker_lease_table()
    op.create_table(
        "UserAccessLogs",
        sqlalchemy_seqkeys.spanner_shard_column("ShardId", "LastAccess", shards=2048),
        sa.Column("LastAccess", sa.DateTime(timezone=True), nullable=False),
        sa.Column("UserId", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.PrimaryKeyConstraint("ShardId", "LastAccess", "UserId"),
    )


def downgrade() -> None:
    op.drop_table("UserAccessLogs")
    op.drop_worker_lease_table()
    op.drop_bit_reversed_sequence("order_id", start_with_counter=1000, skip_range=(1, 99999))
    op.drop_table_sequence("invoice_no", start=1000)
    op.drop_sequences_table()
