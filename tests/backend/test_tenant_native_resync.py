"""A tenant's migration (a connection under a ``schema_translate_map``): the native-sequence
resyncs move the tenant's sequence, and doctor reads the tenant's sequence, not the one of
the same name in the default schema."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.engine import Engine

import sqlalchemy_seqkeys.alembic  # noqa: F401 - registers the operations
from sqlalchemy_seqkeys import BitReversedSequence, PooledSequence, doctor
from sqlalchemy_seqkeys.bitreverse import reverse_bits
from tests._helpers import tenant_schemas

pytestmark = pytest.mark.backend

CASES: dict[str, tuple[Callable[[sa.MetaData], object], Callable[[int], int], str]] = {
    "bit_reversed": (
        lambda md: BitReversedSequence("tn_acct", metadata=md),
        reverse_bits,
        "resync_bit_reversed_sequence",
    ),
    "pooled": (
        lambda md: PooledSequence("tn_acct", batch_size=1, metadata=md),
        lambda n: n,
        "resync_pooled_sequence",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_tenants_resync_and_doctor_use_the_tenants_sequence(pg_engine: Engine, case: str) -> None:
    make, key_of, op_name = CASES[case]
    metadata = sa.MetaData()
    default = make(metadata)
    accounts = sa.Table(
        "tn_accounts",
        metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, default=default, autoincrement=False),
    )
    with tenant_schemas(pg_engine, "tn_one") as (tenant,):
        try:
            metadata.create_all(pg_engine)  # the default schema's sequence and table
            metadata.create_all(tenant)  # the tenant's
            with tenant.begin() as conn:
                conn.execute(accounts.insert(), [{"id": key_of(n)} for n in range(1, 6)])
            behind = [f for f in doctor(tenant, metadata).findings if f.check == "behind"]
            assert [f.status for f in behind] == ["problem"], behind
            with tenant.begin() as conn:
                operations = Operations(MigrationContext.configure(conn))
                getattr(operations, op_name)("tn_acct", "tn_accounts", "id")
            behind = [f for f in doctor(tenant, metadata).findings if f.check == "behind"]
            assert [f.status for f in behind] == ["ok"], behind
            with tenant.begin() as conn:  # the tenant's next keys are new ones
                conn.execute(accounts.insert(), [{} for _ in range(3)])
            with pg_engine.connect() as conn:  # the default schema's sequence, untouched
                assert conn.scalar(sa.text("SELECT last_value FROM public.tn_acct")) == 1
        finally:
            metadata.drop_all(pg_engine)
