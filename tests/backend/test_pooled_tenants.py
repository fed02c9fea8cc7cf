"""PooledSequence with a ``schema_translate_map``: each tenant has its own sequence and
blocks (PostgreSQL schemas, MariaDB databases).
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import PooledSequence, PooledSequenceMismatchError, resync_pooled_sequence
from tests.backend._pooled import ROWS, execute
from tests.backend._tenants import Tenants, two_tenants  # noqa: F401 - the tenants fixture

pytestmark = pytest.mark.backend


def test_tenants_have_their_own_sequences_and_blocks(tenants: Tenants) -> None:
    """A schema_translate_map reaches the catalog check, nextval and resync."""
    engine, schemas, (a, b) = tenants
    for start, tenant in zip((100, 5000), (a, b), strict=True):
        PooledSequence("orders", batch_size=10, start=start).create(tenant)
    sequence = PooledSequence("orders", batch_size=10)
    assert sequence.next_values(a, 12) == list(range(100, 112))
    assert sequence.next_values(b, 12) == list(range(5000, 5012))
    execute(engine, f"ALTER SEQUENCE {schemas[1]}.orders INCREMENT BY 3")
    other = PooledSequence("orders", batch_size=10)
    assert other.next_value(a) == 120  # tenant a is as declared
    with pytest.raises(PooledSequenceMismatchError, match="INCREMENT BY 3"):
        other.next_value(b)
    metadata = sa.MetaData()
    rows = sa.Table(ROWS, metadata, sa.Column("id", sa.BigInteger, primary_key=True))
    metadata.create_all(a)
    with a.begin() as conn:
        conn.execute(rows.insert(), [{"id": 7000}])
    assert resync_pooled_sequence(a, "orders", ROWS, "id") == 7001
    assert PooledSequence("orders", batch_size=10).next_value(a) == 7001
    assert sequence.next_values(b, 8) == list(range(5012, 5020))  # b's block, untouched
