"""A ``schema_translate_map`` changed in place (the same dict, another tenant): SQLAlchemy
sends the next rows to the new tenant's tables, and their keys must come from that tenant's
sequence, not from the block the former tenant's left in this process."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import PooledSequence, TableSequence, sequences_table
from tests._helpers import tenant_schemas
from tests.conftest import AsyncDatabase

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


def test_an_async_lane_keeps_each_tenant_on_its_own_sequence(
    async_pg_database: AsyncDatabase,
) -> None:
    """The lane's engine for a tenant is not the caller's map, which may change later."""
    sequence = TableSequence("moved_lane", mode="async_batch", batch_size=2, low_watermark=0)
    metadata = sa.MetaData()
    sequences_table(metadata)
    handed_to_ta: list[int] = []
    with tenant_schemas(async_pg_database.sync, "moved_la", "moved_lb") as tenants:
        for tenant in tenants:
            metadata.create_all(tenant)
            sequence.create(tenant)

        async def main() -> None:
            root = async_pg_database.engine()
            try:
                tenant_map = {None: "moved_la"}
                changing = root.execution_options(schema_translate_map=tenant_map)
                handed_to_ta.extend([await sequence.next_value_async(changing) for _ in "ab"])
                tenant_map[None] = "moved_lb"  # the same dict, another tenant
                [await sequence.next_value_async(changing) for _ in "ab"]
                ta = root.execution_options(schema_translate_map={None: "moved_la"})
                handed_to_ta.extend([await sequence.next_value_async(ta) for _ in "abcd"])
            finally:
                await root.dispose()

        asyncio.run(main())
        fresh = TableSequence("moved_lane", mode="separate")
        taken = {fresh.next_value(tenants[0]) for _ in range(8)}
    assert len(set(handed_to_ta)) == 6, handed_to_ta
    assert not set(handed_to_ta) & taken, f"handed out again: {set(handed_to_ta) & taken}"
