"""doctor under live inserts, and the fixes it prints for a tenant (review of doctor).

Before: doctor read a counter, then ``MAX(key)``: a row committed between the two
reads looked like a counter behind its keys (a false "inserts would collide", exit
1). Now ``MAX(key)`` (or every key, for bit-reversed keys) is read first: every key
in the table came from a counter value taken before. And the fix printed for a
tenant's connection (``schema_translate_map``) resynced the default schema's
sequence instead of the tenant's.
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import (
    BitReversedSequence,
    PooledSequence,
    TableSequence,
    doctor,
    resync_pooled_sequence,
    resync_table_sequence,
    reverse_bits,
    sequences_table,
)
from tests._helpers import tenant_schemas
from tests.backend.test_doctor import fresh_engine
from tests.backend.test_doctor_bit_reversed import run_fix

pytestmark = pytest.mark.backend


def _models(prefix: str) -> tuple[sa.MetaData, list[sa.Table]]:
    """A pooled key, a table-sequence key and a bit-reversed key."""
    metadata = sa.MetaData()
    sequences_table(metadata)
    defaults = (
        PooledSequence(f"{prefix}_pool", batch_size=1, metadata=metadata),
        TableSequence(f"{prefix}_rows", mode="in_transaction", metadata=metadata),
        BitReversedSequence(f"{prefix}_bits", metadata=metadata),
    )
    tables = [
        sa.Table(
            f"{prefix}_{kind}_t",
            metadata,
            sa.Column("id", sa.BigInteger, primary_key=True, default=default),
        )
        for kind, default in zip(("pool", "rows", "bits"), defaults, strict=True)
    ]
    return metadata, tables


def _reads_keys(table: sa.Table, statement: str) -> bool:
    """The statement is doctor's read of ``table``'s keys (MAX, or a page of keys)."""
    text = statement.lower()
    return table.name in text and ("max(" in text or "order by" in text)


@pytest.mark.parametrize("name", ["postgresql", "mysql"])
def test_a_row_committed_while_doctor_reads_is_no_problem(engines: Any, name: str) -> None:
    """A writer commits a row just before doctor reads each table's keys: with the
    counter read after the keys, doctor sees the counter past them (before, a problem)."""
    metadata, tables = _models("dr_live")
    with fresh_engine(engines, name) as (engine, url):
        metadata.create_all(engine)
        with engine.begin() as conn:
            if name == "mysql":  # no server cache: doctor reads the next values exactly
                for sequence in ("dr_live_pool", "dr_live_bits"):
                    conn.exec_driver_sql(f"ALTER SEQUENCE {sequence} NOCACHE")
            for table in tables:
                conn.execute(table.insert())
        writer = sa.create_engine(url)
        pending = set(tables)

        def before(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
            for table in [t for t in tables if t in pending and _reads_keys(t, statement)]:
                pending.discard(table)
                with writer.begin() as conn:  # another process's insert, committed
                    conn.execute(table.insert())

        sa.event.listen(engine, "before_cursor_execute", before)
        try:
            report = doctor(engine, metadata)
        finally:
            sa.event.remove(engine, "before_cursor_execute", before)
            writer.dispose()
        assert not pending, pending  # each table had its row committed meanwhile
        assert report.healthy, report.format()
        with engine.connect() as conn:
            for table in tables:
                assert conn.scalar(sa.select(sa.func.count()).select_from(table)) == 2


def test_the_fixes_printed_for_a_tenant_fix_the_tenant(engines: Any) -> None:
    metadata, (pool, rows, bits) = _models("dr_tn")
    with (
        fresh_engine(engines, "postgresql") as (engine, _url),
        tenant_schemas(engine, "dr_tenant") as (tenant,),
    ):
        metadata.create_all(engine)
        metadata.create_all(tenant)
        with tenant.begin() as conn:  # an import into the tenant's tables only
            conn.execute(pool.insert(), [{"id": 500}])
            conn.execute(rows.insert(), [{"id": 500}])
            conn.execute(bits.insert(), [{"id": reverse_bits(300)}])
        report = doctor(tenant, metadata)
        found = {f.subject: f for f in report.problems}
        assert set(found) == {f"{t.name}.id" for t in (pool, rows, bits)}, report.format()
        for finding in found.values():
            fix = finding.fix
            assert fix is not None
            assert "dr_tenant" in fix, fix
            if fix.startswith("in a migration: "):  # the tenant's schemas, named
                run_fix(engine, fix)
            else:  # Python, on the tenant's map
                code = fix.split(" (Python;", 1)[0]
                names = {
                    "engine": engine,
                    "resync_pooled_sequence": resync_pooled_sequence,
                    "resync_table_sequence": resync_table_sequence,
                }
                exec(code, names)
        after = doctor(tenant, metadata)
        assert after.healthy, after.format()
        assert doctor(engine, metadata).healthy  # the default schema's, as they were
        with tenant.begin() as conn:
            for table in (pool, rows, bits):
                conn.execute(table.insert())
