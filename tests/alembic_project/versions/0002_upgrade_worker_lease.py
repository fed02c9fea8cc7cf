"""a worker-lease table of an older version, upgraded (for the offline SQL snapshots)

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23 00:00:00

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # the lease table as version 0.1 created it: no high_water_ms
    op.create_table(
        "old_workers",
        sa.Column("worker_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("owner", sa.String(length=64), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("worker_id"),
    )
    op.upgrade_worker_lease_table(table="old_workers")


def downgrade() -> None:
    op.downgrade_worker_lease_table(table="old_workers")
    op.drop_table("old_workers")
