"""Offline (``--sql``): the seqkeys operations refuse table names the engine cannot hold.

PostgreSQL would cut a name past 63 bytes (``"é" * 32`` is 64), silently, so two long
names would be one table; MySQL/MariaDB refuse names past 64 characters. Offline nothing
can be asked of a server, so the name is checked before any SQL is printed. A bit-reversed
sequence's schema reaches the printed ``CREATE SEQUENCE``.
"""

from __future__ import annotations

import io
from collections.abc import Callable

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


#: every seqkeys operation that takes a table name, called with ``name`` there (the
#: servers' refusals: tests/backend/test_alembic_hostile.py)
TAKE_A_TABLE_NAME: list[Callable[[Operations, str], object]] = [
    lambda op, name: op.create_sequences_table(name),
    lambda op, name: op.drop_sequences_table(name),
    lambda op, name: op.create_worker_lease_table(name),
    lambda op, name: op.drop_worker_lease_table(name),
    lambda op, name: op.create_table_sequence("y", table=name),
    lambda op, name: op.drop_table_sequence("y", table=name),
    lambda op, name: op.resync_table_sequence("x", "rows", "id", sequences_table=name),
    lambda op, name: op.make_sequence_names_case_sensitive(name),
    lambda op, name: op.upgrade_worker_lease_table(table=name),
    lambda op, name: op.downgrade_worker_lease_table(table=name),
]


def assert_every_operation_refuses(op: Operations, long: str, limit: str) -> None:
    """Each of TAKE_A_TABLE_NAME refuses the table name ``long``, naming ``limit``."""
    for attempt in TAKE_A_TABLE_NAME:
        with pytest.raises(MigrationError, match=rf"table name '{long}' cannot be used.*{limit}"):
            attempt(op, long)


def _offline(dialect: str) -> tuple[Operations, io.StringIO]:
    buffer = io.StringIO()
    context = MigrationContext.configure(
        dialect_name=dialect, opts={"as_sql": True, "output_buffer": buffer}
    )
    return Operations(context), buffer


@pytest.mark.parametrize(("dialect", "long", "limit"), TOO_LONG, ids=["ascii", "utf8", "mysql"])
def test_a_table_name_too_long_is_refused_offline(dialect: str, long: str, limit: str) -> None:
    op, buffer = _offline(dialect)
    assert_every_operation_refuses(op, long, limit)
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
