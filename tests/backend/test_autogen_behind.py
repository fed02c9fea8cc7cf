"""A sequence that exists already, but is behind a table that holds keys (it became the
default of a table with rows, or the rows were imported with their keys): autogenerate
writes the resync that moves it past them, for each kind of counter, and nothing once it is
past. Without it the sequence hands out keys the table holds, which ``alembic check`` did
not see. On SQLite, PostgreSQL and MariaDB, through Alembic's own autogenerate.
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import produce_migrations, render_python_code
from alembic.migration import MigrationContext
from alembic.operations import Operations

import sqlalchemy_seqkeys.alembic
from sqlalchemy_seqkeys import (
    BitReversed,
    BitReversedSequence,
    PooledSequence,
    TableSequence,
    reverse_bits,
    sequences_table,
)
from tests._helpers import fresh_database_engine as database
from tests.backend.test_alembic_hostile import operations

sqlalchemy_seqkeys.alembic.register()  # where Alembic has not loaded the plugin (not installed)

pytestmark = pytest.mark.backend

THREE = ["sqlite", "postgresql", "mysql"]
KEYS = range(1, 31)  # the keys (or, for the bit-reversed tables, counters) the tables hold


def _models() -> tuple[sa.MetaData, dict[str, sa.Table]]:
    models = sa.MetaData()
    sequences_table(models)

    def table(name: str, default: object) -> sa.Table:
        return sa.Table(
            name, models, sa.Column("id", sa.BigInteger, primary_key=True, default=default)
        )

    return models, {
        "plain": table("plain", TableSequence("plain_no", mode="batch")),
        "pooled": table("pooled", PooledSequence("pooled_no", 10)),
        "reversed_row": table("reversed_row", BitReversed(TableSequence("rr_ctr", mode="batch"))),
        "reversed_seq": table("reversed_seq", BitReversedSequence("rs_no")),
    }


def _autogenerate(op: Operations, models: sa.MetaData) -> str:
    context = MigrationContext.configure(
        op.get_bind(),
        opts={
            "target_metadata": models,
            "autogenerate_plugins": ["alembic.autogenerate.*", "seqkeys"],
        },
    )
    return render_python_code(produce_migrations(context, models).upgrade_ops)


def _op_lines(code: str) -> list[str]:
    return [line.strip() for line in code.splitlines() if line.strip().startswith("op.")]


def _run(op: Operations, code: str) -> None:
    """Run autogenerate's rendered upgrade as a migration would."""
    namespace = {"op": op, "sa": sa, "sqlalchemy_seqkeys": sqlalchemy_seqkeys}
    exec("\n".join(line.strip() for line in code.splitlines()), namespace)


@pytest.mark.parametrize("name", THREE)
def test_autogenerate_resyncs_an_existing_sequence_behind_its_table(
    name: str, engines: Any
) -> None:
    with database(engines, name, "behind") as engine:
        models, tables = _models()
        with operations(engine) as op:  # the schema as the models declare it, rows added
            _run(op, _autogenerate(op, models))
            assert not _op_lines(_autogenerate(op, models))
            for kind, table in tables.items():
                keys = [reverse_bits(k) for k in KEYS] if kind.startswith("reversed") else KEYS
                op.bulk_insert(table, [{"id": k} for k in keys])
            # the sequences are behind the rows now: each gets its resync, nothing else
            code = _autogenerate(op, models)
            assert sorted(_op_lines(code)) == [
                "op.resync_bit_reversed_sequence('rs_no', 'reversed_seq', 'id')",
                "op.resync_bit_reversed_table_sequence('rr_ctr', 'reversed_row', 'id')",
                "op.resync_pooled_sequence('pooled_no', 'pooled', 'id')",
                "op.resync_table_sequence('plain_no', 'plain', 'id')",
            ], code
            _run(op, code)
            assert not _op_lines(_autogenerate(op, models))  # past the rows: nothing to do
        for kind, table in tables.items():
            with engine.begin() as conn:
                for _ in range(5):
                    conn.execute(table.insert())  # no key the table holds
                keys = list(conn.scalars(sa.select(table.c.id)))
            assert len(set(keys)) == len(KEYS) + 5, kind
