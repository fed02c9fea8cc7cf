"""A bit-reversed resync leaves out the keys inside the sequence's ``skip_range``.

Adopting a bit-reversed key on a table that holds legacy keys 1..N, with
``skip_range=(1, N)``: those keys are never handed out, so they are no counter's value.
``op.resync_bit_reversed_sequence`` and ``op.resync_bit_reversed_table_sequence`` take
``skip_range=`` and move the counter past the other keys only, as doctor's ``behind``
check judges them: the counter stays where it is, and a legacy key of 2**63 - 1 inside the
range is no reason to refuse.
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from alembic.operations import Operations

from sqlalchemy_seqkeys import (
    BitReversed,
    BitReversedSequence,
    InvalidBitReversalError,
    MigrationError,
    TableSequence,
    doctor,
    reverse_bits,
    sequences_table,
)
from sqlalchemy_seqkeys.alembic.ops import (
    ResyncBitReversedSequenceOp,
    ResyncBitReversedTableSequenceOp,
)
from sqlalchemy_seqkeys.sequences.table import read_next_value
from tests._helpers import fresh_database_engine as database
from tests.backend._autogen import autogenerate, op_lines, run
from tests.backend.test_alembic_hostile import operations

pytestmark = pytest.mark.backend

THREE = ["sqlite", "postgresql", "mysql"]
TABLE = "seqkeys_brskip_sequences"
LEGACY = (1, 1000)
TOP = 2**63 - 1


def _keys_table(op: Operations, name: str, keys: list[int]) -> sa.Table:
    table = op.create_table(
        name, sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False)
    )
    assert table is not None
    op.bulk_insert(table, [{"id": key} for key in keys])
    return table


def _resync_both(op: Operations, table: str, skip_range: tuple[int, int] | None) -> None:
    op.resync_bit_reversed_table_sequence(
        "ctr", table, "id", sequences_table=TABLE, skip_range=skip_range
    )
    op.resync_bit_reversed_sequence(
        "brs", table, "id", sequences_table=TABLE, skip_range=skip_range
    )


@pytest.mark.parametrize("name", THREE)
def test_keys_inside_the_skip_range_are_no_counters(name: str, engines: Any) -> None:
    with database(engines, name, "brskip") as engine, operations(engine) as op:
        conn = op.get_bind()
        op.create_sequences_table(TABLE)
        op.create_table_sequence("ctr", start=1, table=TABLE)
        op.create_bit_reversed_sequence("brs", skip_range=LEGACY, table=TABLE)
        legacy = _keys_table(op, "legacy", list(range(1, 1001)))
        _resync_both(op, "legacy", LEGACY)  # only legacy keys: nothing moves
        assert read_next_value(conn, "ctr", table=TABLE) == 1
        brs = BitReversedSequence("brs", skip_range=LEGACY, table=TABLE)
        assert brs.next_value(conn) == reverse_bits(1)  # Spanner's first value
        # keys handed out since count, the legacy ones around them still do not
        op.bulk_insert(legacy, [{"id": reverse_bits(c)} for c in (2, 40, 3)])
        _resync_both(op, "legacy", LEGACY)
        assert read_next_value(conn, "ctr", table=TABLE) == 41
        assert reverse_bits(brs.next_value(conn)) == 41
        # without the skip range every legacy key is a counter: reverse_bits(1000)'s, ...
        largest = max(reverse_bits(k) for k in range(1, 1001))
        _resync_both(op, "legacy", None)
        assert read_next_value(conn, "ctr", table=TABLE) == largest + 1


@pytest.mark.parametrize("name", THREE)
def test_a_legacy_key_at_the_bigint_top_inside_the_skip_range_is_left_out(
    name: str, engines: Any
) -> None:
    skip = (TOP - 999, TOP)
    with database(engines, name, "brskiptop") as engine, operations(engine) as op:
        conn = op.get_bind()
        op.create_sequences_table(TABLE)
        op.create_table_sequence("ctr", start=1, table=TABLE)
        op.create_bit_reversed_sequence("brs", skip_range=skip, table=TABLE)
        _keys_table(op, "legacy", [TOP - 5, TOP, reverse_bits(7)])
        _resync_both(op, "legacy", skip)
        assert read_next_value(conn, "ctr", table=TABLE) == 8
        brs = BitReversedSequence("brs", skip_range=skip, table=TABLE)
        assert reverse_bits(brs.next_value(conn)) == 8
        # outside the skip range, the key 2**63 - 1 is still refused, nothing changed
        with pytest.raises(MigrationError, match="cannot move past"):
            op.resync_bit_reversed_table_sequence(
                "ctr", "legacy", "id", sequences_table=TABLE, skip_range=(1, 1000)
            )
        with pytest.raises(MigrationError, match="cannot move past"):
            op.resync_bit_reversed_sequence(
                "brs", "legacy", "id", sequences_table=TABLE, skip_range=(1, 1000)
            )
        assert read_next_value(conn, "ctr", table=TABLE) == 8


@pytest.mark.parametrize(
    "op_class", [ResyncBitReversedSequenceOp, ResyncBitReversedTableSequenceOp]
)
def test_the_skip_range_is_checked_and_rendered(op_class: Any) -> None:
    operation = op_class("c", "t", "id", skip_range=[1, 1000])
    assert operation.skip_range == (1, 1000)
    assert operation.render() == f"op.{op_class.op_name}('c', 't', 'id', skip_range=(1, 1000))"
    assert op_class("c", "t", "id").render() == f"op.{op_class.op_name}('c', 't', 'id')"
    for bad in ((5, 1), (-1, 3), (1, 2**63), "1-1000", (1, 2, 3), (True, 5)):
        with pytest.raises(InvalidBitReversalError, match="skip_range"):
            op_class("c", "t", "id", skip_range=bad)


def _adopting_models() -> tuple[sa.MetaData, sa.Table, sa.Table]:
    models = sa.MetaData()
    sequences_table(models, TABLE)
    counter = TableSequence("acct_ctr", mode="batch", table=TABLE)
    accounts = sa.Table(
        "acct",
        models,
        sa.Column(
            "id", sa.BigInteger, primary_key=True, default=BitReversed(counter, skip_range=LEGACY)
        ),
    )
    customer_id = BitReversedSequence("cust_id", skip_range=LEGACY, table=TABLE)
    customers = sa.Table(
        "cust", models, sa.Column("id", sa.BigInteger, primary_key=True, default=customer_id)
    )
    return models, accounts, customers


@pytest.mark.parametrize("name", THREE)
def test_autogenerate_adopting_legacy_keys_keeps_the_counter(name: str, engines: Any) -> None:
    with database(engines, name, "brskipag") as engine:
        models, accounts, customers = _adopting_models()
        with engine.begin() as conn:
            models.create_all(conn)
            for table in (accounts, customers):
                conn.execute(table.insert(), [{"id": k} for k in range(1, 1001)])
        with operations(engine) as op:
            code = autogenerate(op, models)
            lines = op_lines(code)
            assert (
                "op.resync_bit_reversed_table_sequence('acct_ctr', 'acct', 'id', "
                f"sequences_table={TABLE!r}, skip_range=(1, 1000))"
            ) in lines
            assert any(
                line.startswith("op.resync_bit_reversed_sequence('cust_id', 'cust', 'id'")
                and line.endswith("skip_range=(1, 1000))")
                for line in lines
            )
            run(op, code)
            assert not op_lines(autogenerate(op, models))
        for table in (accounts, customers):
            with engine.begin() as conn:
                conn.execute(table.insert())
                new = conn.scalar(sa.select(sa.func.max(table.c.id)))
            assert new == reverse_bits(1), table.name


@pytest.mark.parametrize("name", THREE)
def test_a_counter_found_behind_is_resynced_past_its_keys_not_its_skip_range(
    name: str, engines: Any
) -> None:
    """Keys imported after the sequence was made: autogenerate's `behind` check writes the
    resync with the declared skip_range and sequences table (a sequence of another
    sequences table was resynced against the default one's, and failed there)."""
    with database(engines, name, "brskipbh") as engine:
        models = sa.MetaData()
        sequences_table(models, "custom_seq")
        cust_id = BitReversedSequence("cust_id", skip_range=(1, 1000), table="custom_seq")
        customers = sa.Table(
            "cust", models, sa.Column("id", sa.BigInteger, primary_key=True, default=cust_id)
        )
        with operations(engine) as op:
            run(op, autogenerate(op, models))  # the sequence, on an empty table
        imported = [reverse_bits(c) for c in (1, 2, 3)]
        with engine.begin() as conn:  # legacy keys, and keys of another process's counters
            conn.execute(customers.insert(), [{"id": k} for k in [*range(1, 1001), *imported]])
        found = [f for f in doctor(engine, models).findings if f.check == "behind"]
        assert [f.status for f in found] == ["problem"], found
        assert found[0].fix.endswith("sequences_table='custom_seq', skip_range=(1, 1000))")
        with operations(engine) as op:
            code = autogenerate(op, models)
            (line,) = [x for x in op_lines(code) if "resync" in x]
            assert line.endswith("skip_range=(1, 1000))"), line
            assert found[0].fix.endswith(line.removeprefix("op.resync_bit_reversed_sequence"))
            run(op, code)
            assert not op_lines(autogenerate(op, models))
        with engine.begin() as conn:
            new = conn.execute(customers.insert()).inserted_primary_key[0]
        assert new == reverse_bits(4)
