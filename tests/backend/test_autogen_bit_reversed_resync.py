"""A bit-reversed key's counter created for a table that holds rows: autogenerate follows the
create by ``op.resync_bit_reversed_sequence``, which moves the counter past the largest
``reverse_bits(key)`` (not ``MAX(key)``), never back, and refuses offline.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations

import sqlalchemy_seqkeys.alembic
from sqlalchemy_seqkeys import (
    BitReversed,
    BitReversedSequence,
    MigrationError,
    TableSequence,
    reverse_bits,
    sequences_table,
)
from sqlalchemy_seqkeys.sequences.table import read_next_value
from tests._helpers import fresh_database_engine as database
from tests.backend._autogen import autogenerate, op_lines
from tests.backend.test_alembic_hostile import operations

pytestmark = pytest.mark.backend

THREE = ["sqlite", "postgresql", "mysql"]
TABLE = "seqkeys_brr_sequences"
COUNTERS = range(1, 11)


def _models() -> tuple[sa.MetaData, sa.Table, sa.Table]:
    models = sa.MetaData()
    sequences_table(models, TABLE)
    counter = TableSequence("acct_ctr", mode="batch", table=TABLE)
    accounts = sa.Table(
        "acct",
        models,
        sa.Column("id", sa.BigInteger, primary_key=True, default=BitReversed(counter)),
    )
    customer_id = BitReversedSequence("cust_id", table=TABLE)
    customers = sa.Table(
        "cust", models, sa.Column("id", sa.BigInteger, primary_key=True, default=customer_id)
    )
    return models, accounts, customers


@pytest.mark.parametrize("name", THREE)
def test_autogenerate_resyncs_a_bit_reversed_counter_created_for_a_table_with_keys(
    name: str, engines: Any
) -> None:
    with database(engines, name, "brresync") as engine:
        models, accounts, customers = _models()
        with engine.begin() as conn:  # the tables kept their keys; the counters are gone
            models.create_all(conn)
            for table in (accounts, customers):
                conn.execute(table.insert(), [{"id": reverse_bits(c)} for c in COUNTERS])
        with operations(engine) as op:
            code = autogenerate(op, models)
            lines = op_lines(code)
            create_acct = lines.index(
                f"op.create_table_sequence('acct_ctr', start=1, table={TABLE!r})"
            )
            assert lines[create_acct + 1] == (
                "op.resync_bit_reversed_table_sequence('acct_ctr', 'acct', 'id', "
                f"sequences_table={TABLE!r})"
            )
            create_cust = next(
                i for i, line in enumerate(lines) if line.startswith("op.create_bit_reversed")
            )
            assert lines[create_cust + 1].startswith(
                "op.resync_bit_reversed_sequence('cust_id', 'cust', 'id'"
            )
            namespace = {"op": op, "sa": sa, "sqlalchemy_seqkeys": sqlalchemy_seqkeys}
            exec("\n".join(line.strip() for line in code.splitlines()), namespace)
            assert not op_lines(autogenerate(op, models))
        for table in (accounts, customers):
            with engine.begin() as conn:
                for _ in range(5):
                    conn.execute(table.insert())  # no UNIQUE violation
                keys = list(conn.scalars(sa.select(table.c.id)))
            assert len(set(keys)) == 15
            new = sorted(reverse_bits(k) for k in keys)[10:]
            assert new == list(range(11, 16)), table.name


@pytest.mark.parametrize("name", THREE)
def test_the_resync_moves_past_the_largest_reversed_key_never_back(name: str, engines: Any) -> None:
    with database(engines, name, "brmove") as engine, operations(engine) as op:
        op.create_sequences_table(TABLE)
        op.create_table_sequence("ctr", start=1, table=TABLE)
        op.create_bit_reversed_sequence("brs", table=TABLE)
        keys = op.create_table(
            "keys", sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False)
        )
        assert keys is not None
        op.resync_bit_reversed_table_sequence("ctr", "keys", "id", sequences_table=TABLE)
        op.resync_bit_reversed_sequence("brs", "keys", "id", sequences_table=TABLE)
        assert read_next_value(op.get_bind(), "ctr", table=TABLE) == 1  # no key: unmoved
        # MAX(id) is reverse_bits(1) = 2**62; the largest counter is 40
        op.bulk_insert(keys, [{"id": reverse_bits(c)} for c in (1, 40, 3)] + [{"id": -5}])
        op.resync_bit_reversed_table_sequence("ctr", "keys", "id", sequences_table=TABLE)
        op.resync_bit_reversed_sequence("brs", "keys", "id", sequences_table=TABLE)
        conn = op.get_bind()
        assert read_next_value(conn, "ctr", table=TABLE) == 41
        brs = BitReversedSequence("brs", table=TABLE)
        assert reverse_bits(brs.next_value(conn)) == 41
        op.execute(sa.delete(keys))  # fewer keys now: nothing moves back
        op.bulk_insert(keys, [{"id": reverse_bits(7)}])
        op.resync_bit_reversed_table_sequence("ctr", "keys", "id", sequences_table=TABLE)
        op.resync_bit_reversed_sequence("brs", "keys", "id", sequences_table=TABLE)
        assert read_next_value(conn, "ctr", table=TABLE) == 41
        assert reverse_bits(brs.next_value(conn)) == 42
        op.bulk_insert(keys, [{"id": 2**63 - 1}])  # the counter 2**63 - 1: nothing past it
        with pytest.raises(MigrationError, match="cannot move past"):
            op.resync_bit_reversed_table_sequence("ctr", "keys", "id", sequences_table=TABLE)
        with pytest.raises(MigrationError, match="cannot move past"):
            op.resync_bit_reversed_sequence("brs", "keys", "id", sequences_table=TABLE)
        assert read_next_value(conn, "ctr", table=TABLE) == 41
        with pytest.raises(MigrationError, match="does not exist in table"):
            op.resync_bit_reversed_table_sequence("nope", "keys", "id", sequences_table=TABLE)
        with pytest.raises(MigrationError, match=r"create_bit_reversed_sequence\('nope'\)"):
            op.resync_bit_reversed_sequence("nope", "keys", "id", sequences_table=TABLE)
        with pytest.raises(MigrationError, match="no column"):
            op.resync_bit_reversed_table_sequence("ctr", "keys", "nope", sequences_table=TABLE)


def test_offline_the_resync_is_refused() -> None:
    buffer = io.StringIO()
    context = MigrationContext.configure(
        dialect_name="postgresql", opts={"as_sql": True, "output_buffer": buffer}
    )
    op = Operations(context)
    for resync in (op.resync_bit_reversed_sequence, op.resync_bit_reversed_table_sequence):
        with pytest.raises(MigrationError, match="online"):
            resync("ctr", "keys", "id")
    assert "UPDATE" not in buffer.getvalue()


SPANNER_TABLES = ("seqkeys_brr_keys", TABLE)


def _drop_spanner_objects(conn: sa.Connection) -> None:
    for table in SPANNER_TABLES:
        conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))
    BitReversedSequence("seqkeys_brr_native").drop(conn, checkfirst=True)


def test_on_spanner_the_row_moves_and_the_native_counter_is_refused_with_its_value(
    spanner_engine: sa.Engine,
) -> None:
    with spanner_engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        _drop_spanner_objects(conn)
        op = Operations(MigrationContext.configure(conn))
        try:
            op.create_sequences_table(TABLE)
            op.create_table_sequence("ctr", start=1, table=TABLE)
            op.create_bit_reversed_sequence("seqkeys_brr_native")
            keys = op.create_table(
                "seqkeys_brr_keys",
                sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
            )
            assert keys is not None
            op.resync_bit_reversed_sequence("seqkeys_brr_native", "seqkeys_brr_keys", "id")
            op.bulk_insert(keys, [{"id": reverse_bits(c)} for c in (1, 40, 3)])
            op.resync_bit_reversed_table_sequence(
                "ctr", "seqkeys_brr_keys", "id", sequences_table=TABLE
            )
            assert read_next_value(conn, "ctr", table=TABLE) == 41
            with pytest.raises(MigrationError, match=r"counter 40.*from 41 on") as refused:
                op.resync_bit_reversed_sequence("seqkeys_brr_native", "seqkeys_brr_keys", "id")
            advice = "ALTER SEQUENCE seqkeys_brr_native SET OPTIONS (start_with_counter = 41)"
            assert advice in str(refused.value)
            conn.execute(sa.text(advice))  # what it says to do by hand works (the emulator)
            native = BitReversedSequence("seqkeys_brr_native")
            assert [reverse_bits(v) for v in native.next_values(spanner_engine, 2)] == [41, 42]
        finally:
            _drop_spanner_objects(conn)
