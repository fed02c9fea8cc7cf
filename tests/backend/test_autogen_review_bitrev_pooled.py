"""A key whose default is ``BitReversed(PooledSequence(...))``, through Alembic's own autogenerate
(review): its pooled sequence is proposed like a plain ``PooledSequence`` default's, declared with
``metadata=`` or not, and followed by the bit-reversed resync where the table holds keys (before,
it was not proposed at all, or proposed without a resync, and the first insert after the upgrade
repeated a key the table held); the sequences table that holds its row is never proposed for
dropping. On SQLite, PostgreSQL and MariaDB, and on the Spanner emulator, where the pooled
counter is a sequences-table row beside native sequences.
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations

from sqlalchemy_seqkeys import BitReversed, PooledSequence, reverse_bits
from sqlalchemy_seqkeys.alembic.pooled_ops import declared_pooled_sequences
from tests._helpers import fresh_database_engine as database
from tests.backend._autogen import autogenerate, op_lines, run
from tests.backend.test_alembic_hostile import operations

pytestmark = pytest.mark.backend

THREE = ["sqlite", "postgresql", "mysql"]
COUNTERS = range(1, 31)  # the counters whose keys the tables hold


def _models(attached: bool, plain: bool = False) -> tuple[sa.MetaData, sa.Table]:
    """``items`` keyed by ``BitReversed(item_ctr)``; with ``plain``, ``plain_items`` keyed by
    ``item_ctr`` itself."""
    models = sa.MetaData()
    counter = PooledSequence("item_ctr", batch_size=10, metadata=models if attached else None)
    items = sa.Table(
        "items",
        models,
        sa.Column("id", sa.BigInteger, primary_key=True, default=BitReversed(counter)),
    )
    if plain:
        sa.Table(
            "plain_items",
            models,
            sa.Column("id", sa.BigInteger, primary_key=True, default=counter),
        )
    return models, items


def test_a_bit_reversed_pooled_sequence_is_declared() -> None:
    models, _ = _models(attached=False)
    assert list(declared_pooled_sequences([models])) == ["item_ctr"]


@pytest.mark.parametrize("plain", [False, True], ids=["alone", "and_plain"])
@pytest.mark.parametrize("attached", [False, True], ids=["default", "metadata"])
@pytest.mark.parametrize("name", THREE)
def test_the_counter_is_created_and_moved_past_the_keys_the_table_holds(
    name: str, attached: bool, plain: bool, engines: Any
) -> None:
    with database(engines, name, "brpool") as engine:
        models, items = _models(attached, plain)
        with engine.begin() as conn:  # the tables kept their keys; the counter is gone
            for table in models.tables.values():  # not create_all, which makes the attached
                table.create(conn)
            conn.execute(items.insert(), [{"id": reverse_bits(c)} for c in COUNTERS])
            if plain:
                conn.execute(models.tables["plain_items"].insert(), [{"id": 1}, {"id": 2}])
        with operations(engine) as op:
            code = autogenerate(op, models)
            lines = op_lines(code)
            create = lines.index("op.create_pooled_sequence('item_ctr', 10)")
            # the bit-reversed key's counter past the largest reverse_bits(key), a plain
            # key's past MAX(id): both use the one sequence
            resyncs = ["op.resync_bit_reversed_sequence('item_ctr', 'items', 'id')"]
            if plain:
                resyncs.append("op.resync_pooled_sequence('item_ctr', 'plain_items', 'id')")
            assert sorted(lines[create + 1 : create + 1 + len(resyncs)]) == resyncs, lines
            run(op, code)
            assert not op_lines(autogenerate(op, models))  # alembic check: nothing left
        with engine.begin() as conn:
            for _ in range(5):
                conn.execute(items.insert())  # no duplicate key
            keys = list(conn.scalars(sa.select(items.c.id)))
        assert len(set(keys)) == len(COUNTERS) + 5
        new = sorted(reverse_bits(k) for k in keys)[len(COUNTERS) :]
        assert new[0] > max(COUNTERS), new


@pytest.mark.parametrize("attached", [False, True], ids=["default", "metadata"])
def test_on_sqlite_its_undeclared_sequences_table_is_never_dropped(
    attached: bool, engines: Any
) -> None:
    with database(engines, "sqlite", "brpoolkeep") as engine:
        models, items = _models(attached)
        with operations(engine) as op:
            lines = op_lines(autogenerate(op, models))
            assert "op.create_sequences_table()" in lines  # the row needs it, undeclared
            run(op, autogenerate(op, models))
        with engine.begin() as conn:
            conn.execute(items.insert())
        with operations(engine) as op:
            assert op_lines(autogenerate(op, models)) == []  # no op.drop_sequences_table()
        assert sa.inspect(engine).has_table("sequences")


def _drop_spanner_objects(conn: sa.Connection) -> None:
    for table in ("seqkeys_brp_items", "sequences"):
        conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))


def test_on_spanner_the_pooled_row_is_moved_as_a_row(spanner_engine: sa.Engine) -> None:
    models = sa.MetaData()
    counter = PooledSequence("seqkeys_brp_ctr", batch_size=10)
    items = sa.Table(
        "seqkeys_brp_items",
        models,
        sa.Column("id", sa.BigInteger, primary_key=True, default=BitReversed(counter)),
    )
    with spanner_engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        _drop_spanner_objects(conn)
        try:
            models.create_all(conn)
            conn.execute(items.insert(), [{"id": reverse_bits(c)} for c in (1, 40, 3)])
            op = Operations(MigrationContext.configure(conn))
            code = autogenerate(op, models)
            lines = op_lines(code)
            create = lines.index("op.create_pooled_sequence('seqkeys_brp_ctr', 10)")
            assert lines[create + 1] == (
                "op.resync_bit_reversed_table_sequence('seqkeys_brp_ctr', "
                "'seqkeys_brp_items', 'id')"
            ), lines
            run(op, code)
            assert counter.next_values(conn, 2) == [41, 42]  # the counters, not reversed
        finally:
            _drop_spanner_objects(conn)
