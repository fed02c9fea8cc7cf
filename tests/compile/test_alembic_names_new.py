"""Offline (``--sql``): the seqkeys operations refuse table names the engine cannot hold.

PostgreSQL would cut a name past 63 bytes (``"é" * 32`` is 64), silently, so two long
names would be one table; MySQL/MariaDB refuse names past 64 characters. Offline nothing
can be asked of a server, so the name is checked before any SQL is printed. A bit-reversed
sequence's schema reaches the printed ``CREATE SEQUENCE``.
"""

from __future__ import annotations

import io

import pytest
from alembic.migration import MigrationContext
from alembic.operations import Operations

import sqlalchemy_seqkeys.alembic
from sqlalchemy_seqkeys import MigrationError

sqlalchemy_seqkeys.alembic.register()  # where Alembic has not loaded the plugin (not installed)

#: (dialect, name, the limit the message names)
TOO_LONG = [
    ("postgresql", "s" * 63 + "_a", "at most 63 bytes"),
    ("postgresql", "é" * 32, "at most 63 bytes"),  # 32 characters, 64 bytes
    ("mysql", "s" * 65, "at most 64 characters"),
]


def _offline(dialect: str) -> tuple[Operations, io.StringIO]:
    buffer = io.StringIO()
    context = MigrationContext.configure(
        dialect_name=dialect, opts={"as_sql": True, "output_buffer": buffer}
    )
    return Operations(context), buffer


@pytest.mark.parametrize(("dialect", "long", "limit"), TOO_LONG, ids=["ascii", "utf8", "mysql"])
def test_a_table_name_too_long_is_refused_offline(dialect: str, long: str, limit: str) -> None:
    op, buffer = _offline(dialect)
    for attempt, args, kwargs in (
        (op.create_sequences_table, (long,), {}),
        (op.drop_sequences_table, (long,), {}),
        (op.create_worker_lease_table, (long,), {}),
        (op.drop_worker_lease_table, (long,), {}),
        (op.create_table_sequence, ("y",), {"table": long}),
        (op.drop_table_sequence, ("y",), {"table": long}),
        (op.resync_table_sequence, ("x", "rows", "id"), {"sequences_table": long}),
        (op.make_sequence_names_case_sensitive, (long,), {}),
        (op.upgrade_worker_lease_table, (), {"table": long}),
        (op.downgrade_worker_lease_table, (), {"table": long}),
    ):
        with pytest.raises(MigrationError, match=rf"table name '{long}' cannot be used.*{limit}"):
            attempt(*args, **kwargs)
    assert buffer.getvalue() == ""  # nothing printed


def test_a_name_at_the_limit_is_printed() -> None:
    op, buffer = _offline("postgresql")
    op.create_sequences_table("s" * 63)
    assert f"CREATE TABLE {'s' * 63} (" in buffer.getvalue()


@pytest.mark.parametrize("dialect", ["postgresql", "mariadb"])
def test_a_bit_reversed_sequence_is_printed_in_its_schema(dialect: str) -> None:
    op, buffer = _offline(dialect)
    op.create_bit_reversed_sequence("acct_id", schema="billing")
    op.drop_bit_reversed_sequence("acct_id", schema="billing")
    sql = buffer.getvalue()
    assert "CREATE SEQUENCE billing.acct_id" in sql
    assert "DROP SEQUENCE billing.acct_id" in sql
