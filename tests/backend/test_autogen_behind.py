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

from sqlalchemy_seqkeys import (
    BitReversed,
    BitReversedSequence,
    PooledSequence,
    TableSequence,
    reverse_bits,
    sequences_table,
)
from tests._helpers import fresh_database_engine as database
from tests.backend._autogen import autogenerate, op_lines, run
from tests.backend.test_alembic_hostile import operations

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


@pytest.mark.parametrize("name", THREE)
def test_autogenerate_resyncs_an_existing_sequence_behind_its_table(
    name: str, engines: Any
) -> None:
    with database(engines, name, "behind") as engine:
        models, tables = _models()
        with operations(engine) as op:  # the schema as the models declare it, rows added
            run(op, autogenerate(op, models))
            assert not op_lines(autogenerate(op, models))
            for kind, table in tables.items():
                keys = [reverse_bits(k) for k in KEYS] if kind.startswith("reversed") else KEYS
                op.bulk_insert(table, [{"id": k} for k in keys])
            # the sequences are behind the rows now: each gets its resync, nothing else
            code = autogenerate(op, models)
            assert sorted(op_lines(code)) == [
                "op.resync_bit_reversed_sequence('rs_no', 'reversed_seq', 'id')",
                "op.resync_bit_reversed_table_sequence('rr_ctr', 'reversed_row', 'id')",
                "op.resync_pooled_sequence('pooled_no', 'pooled', 'id')",
                "op.resync_table_sequence('plain_no', 'plain', 'id')",
            ], code
            run(op, code)
            assert not op_lines(autogenerate(op, models))  # past the rows: nothing to do
        for kind, table in tables.items():
            with engine.begin() as conn:
                for _ in range(5):
                    conn.execute(table.insert())  # no key the table holds
                keys = list(conn.scalars(sa.select(table.c.id)))
            assert len(set(keys)) == len(KEYS) + 5, kind
