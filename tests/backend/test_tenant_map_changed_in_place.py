"""A ``schema_translate_map`` changed in place (the same dict, another tenant): SQLAlchemy
sends the next rows to the new tenant's tables, and their keys must come from that tenant's
sequence, not from the block the former tenant's left in this process."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import PooledSequence, TableSequence, sequences_table
from tests._helpers import tenant_schemas

pytestmark = pytest.mark.backend

SEQUENCES: dict[str, Callable[[], TableSequence | PooledSequence]] = {
    "batch": lambda: TableSequence("moved_batch", mode="batch", batch_size=100),
    "separate": lambda: TableSequence("moved_separate", mode="separate"),
    "pooled": lambda: PooledSequence("moved_pooled", batch_size=100),
}


@pytest.mark.parametrize("kind", list(SEQUENCES))
def test_keys_follow_the_map_changed_in_place(pg_engine: Engine, kind: str) -> None:
    sequence = SEQUENCES[kind]()
    metadata = sa.MetaData()
    sequences_table(metadata)
    items = sa.Table(
        "items",
        metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, default=sequence, autoincrement=False),
    )
    with tenant_schemas(pg_engine, "moved_ta", "moved_tb") as tenants:
        for tenant in tenants:
            metadata.create_all(tenant)
            sequence.create(tenant)
        tenant_map = {None: "moved_ta"}
        engine = pg_engine.execution_options(schema_translate_map=tenant_map)
        for schema in ("moved_ta", "moved_tb"):
            tenant_map[None] = schema  # the same dict, another tenant
            with engine.begin() as conn:
                conn.execute(items.insert(), [{} for _ in range(3)])
                conn.execute(items.insert())
        second = tenants[1]
        with second.connect() as conn:
            stored = set(conn.scalars(sa.select(items.c.id)))
        # another process, on the second tenant, counts from that tenant's sequence
        fresh = SEQUENCES[kind]()
        taken = {fresh.next_value(second) for _ in range(3 * len(stored))}
        assert len(stored) == 4
        assert not stored & taken, f"keys of {stored} handed out again: {stored & taken}"
