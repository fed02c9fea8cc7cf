"""MariaDB: a sequences table of version 0.1 compares names case-insensitively. Autogenerate
proposes making it case-sensitive, and the row of every declared name the table lacks,
judged by the exact name: ``inv`` beside ``Inv`` is a sequence of its own, whose row the
first migration creates (a second autogenerate finds nothing).
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import TableSequence, sequences_table
from sqlalchemy_seqkeys.sequences.table import read_next_value
from tests._helpers import fresh_database_engine as database
from tests.backend._autogen import autogenerate, op_lines, run
from tests.backend.test_alembic_hostile import operations

pytestmark = pytest.mark.backend

TABLE = "My Seqs"


def test_a_name_that_differs_only_in_case_gets_its_row(engines: Any) -> None:
    models = sa.MetaData()
    sequences_table(models, TABLE)
    for table, name in (("ci_a", "Inv"), ("ci_b", "inv")):
        sequence = TableSequence(name, mode="in_transaction", table=TABLE)
        sa.Table(table, models, sa.Column("id", sa.BigInteger, primary_key=True, default=sequence))
    with database(engines, "mysql", "cinames") as engine:
        with engine.begin() as conn:  # the 0.1 table: the server's case-insensitive collation
            conn.exec_driver_sql(
                "CREATE TABLE `My Seqs` (name VARCHAR(64) NOT NULL PRIMARY KEY, "
                "next_value BIGINT NOT NULL)"
            )
            conn.exec_driver_sql("INSERT INTO `My Seqs` VALUES ('Inv', 50)")
            models.tables["ci_a"].create(conn)
            models.tables["ci_b"].create(conn)
        with operations(engine) as op:
            code = autogenerate(op, models)
            assert op_lines(code) == [
                f"op.make_sequence_names_case_sensitive({TABLE!r})",
                f"op.create_table_sequence('inv', start=1, table={TABLE!r})",
                f"op.resync_table_sequence('inv', 'ci_b', 'id', sequences_table={TABLE!r})",
            ], code
            run(op, code)
            assert not op_lines(autogenerate(op, models))
            conn = op.get_bind()
            assert read_next_value(conn, "Inv", table=TABLE) == 50
            assert read_next_value(conn, "inv", table=TABLE) == 1
