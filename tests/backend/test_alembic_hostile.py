"""The seqkeys Alembic operations and autogenerate where keys could repeat, on real servers.

Each test works in a database of its own (``engines.fresh_database``) on SQLite,
PostgreSQL and MariaDB:

- a resync op at ``MAX(column)`` = 2**63 - 1 is refused (it would change nothing, and the
  sequence would hand out keys the table holds), and so is a column the table lacks;
- autogenerate never proposes dropping a sequences table the models' sequences use
  without declaring it (a second run finds nothing, ``alembic check`` passes);
- a sequence created for a key column of a table with rows (autogenerate, and again after
  a downgrade) is moved past them by the resync autogenerate writes after it;
- a ``BitReversedSequence`` in another schema is created there;
- a sequences or worker-lease table name the engine cannot hold is refused.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.orm import Session

import sqlalchemy_seqkeys.alembic
from sqlalchemy_seqkeys import (
    BitReversedSequence,
    MigrationError,
    PooledSequence,
    reverse_bits,
)
from sqlalchemy_seqkeys.sequences.table import read_next_value
from tests._helpers import fresh_database_engine as database
from tests.backend.test_alembic import load_models, the_script
from tests.compile.test_alembic_names import assert_every_operation_refuses

sqlalchemy_seqkeys.alembic.register()  # where Alembic has not loaded the plugin (not installed)

pytestmark = pytest.mark.backend

THREE = ("sqlite", "postgresql", "mysql")
TOP = 2**63 - 1
#: the text column's MAX, refused as no key
TEXT_MAX = r"column 'id' of table 'txt' holds '999' \(str\), not an integer"


@contextlib.contextmanager
def operations(engine: sa.Engine) -> Iterator[Operations]:
    """``op`` on an autocommit connection (MariaDB's DDL commits anyway)."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        yield Operations(MigrationContext.configure(conn))


def keys_table(op: Operations, name: str, *keys: int) -> sa.Table:
    table = op.create_table(
        name, sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False)
    )
    assert table is not None
    op.bulk_insert(table, [{"id": key} for key in keys])
    return table


# -- resync: the BIGINT top, and a missing column ------------------------------------


@pytest.mark.parametrize("name", THREE)
def test_a_resync_op_at_the_bigint_top_is_refused(name: str, engines: Any) -> None:
    with database(engines, name, "almax") as engine, operations(engine) as op:
        conn = op.get_bind()
        op.create_sequences_table()
        op.create_table_sequence("inv", start=1)
        op.create_pooled_sequence("ord", 10, start=1)
        keys_table(op, "invoices", 1, 2, TOP)
        with pytest.raises(MigrationError, match=r"9223372036854775807, the BIGINT maximum"):
            op.resync_table_sequence("inv", "invoices", "id")
        assert read_next_value(conn, "inv") == 1  # nothing changed
        with pytest.raises(MigrationError, match=r"'ord' cannot move past it"):
            op.resync_pooled_sequence("ord", "invoices", "id")
        assert PooledSequence("ord", batch_size=10).next_value(engine) == 1  # nothing changed
        # one below the top still moves: the next key is the top
        keys_table(op, "near", TOP - 1)
        op.resync_table_sequence("inv", "near", "id")
        assert read_next_value(conn, "inv") == TOP


@pytest.mark.parametrize("name", THREE)
def test_a_resync_op_names_a_missing_column(name: str, engines: Any) -> None:
    with database(engines, name, "alcol") as engine, operations(engine) as op:
        conn = op.get_bind()
        op.create_sequences_table()
        op.create_table_sequence("inv", start=100)
        op.create_pooled_sequence("ord", 10, start=100)
        keys_table(op, "rows", 150)
        for resync in (op.resync_table_sequence, op.resync_pooled_sequence):
            with pytest.raises(MigrationError, match=r"table 'rows' has no column 'nope'.*: id"):
                resync("inv" if resync == op.resync_table_sequence else "ord", "rows", "nope")
        assert read_next_value(conn, "inv") == 100
        op.resync_table_sequence("inv", "rows", "id")  # the right one still works
        assert read_next_value(conn, "inv") == 151


@pytest.mark.parametrize("name", THREE)
def test_a_resync_op_refuses_a_text_key_column(name: str, engines: Any) -> None:
    """'999' and '42' as text: MAX is '999' there, and 'abc' is no key at all."""
    with database(engines, name, "altxt") as engine, operations(engine) as op:
        conn = op.get_bind()
        op.create_sequences_table()
        op.create_table_sequence("inv", start=5)
        op.create_pooled_sequence("ord", 10, start=5)
        table = op.create_table("txt", sa.Column("id", sa.String(20), primary_key=True))
        assert table is not None
        op.bulk_insert(table, [{"id": "999"}, {"id": "42"}])
        for resync, sequence in (
            (op.resync_table_sequence, "inv"),
            (op.resync_pooled_sequence, "ord"),
        ):
            with pytest.raises(MigrationError, match=TEXT_MAX):
                resync(sequence, "txt", "id")
        assert read_next_value(conn, "inv") == 5  # nothing changed
        assert PooledSequence("ord", batch_size=10).next_value(engine) == 5


# -- autogenerate: real projects -----------------------------------------------------


def _run(project: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SEQKEYS_DATABASE_URL=url)
    return subprocess.run(
        [sys.executable, *args], cwd=project, env=env, capture_output=True, text=True, timeout=300
    )


def _alembic(project: Path, url: str, *args: str) -> str:
    result = _run(project, url, "-m", "alembic", *args)
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result.stdout + result.stderr


@contextlib.contextmanager
def _new_project(engines: Any, name: str, label: str, project: Path, models: str) -> Iterator[str]:
    """A database of its own on engine ``name`` and, at ``project``, a new Alembic project of
    ``models`` for it; yields the database's URL."""
    with engines.fresh_database(name, label) as url:
        result = _run(project, url, "-m", "sqlalchemy_seqkeys", "alembic-init", "migrations")
        assert result.returncode == 0, result.stderr
        (project / "models.py").write_text(models)
        yield url


@contextlib.contextmanager
def _session(project: Path, url: str) -> Iterator[tuple[Any, Session]]:
    """The project's models and a Session on a new pool (no block of an earlier one)."""
    models = load_models(project / "models.py")
    engine = sa.create_engine(url)
    try:
        with Session(engine) as session:
            yield models, session
    finally:
        engine.dispose()


def _autogenerate(project: Path, url: str, *message: str) -> str:
    """The script of a revision autogenerated (``message``: ``-m`` and its text)."""
    return the_script(project, _alembic(project, url, "revision", "--autogenerate", *message))


def _autogenerate_and_upgrade(project: Path, url: str, *message: str) -> str:
    """:func:`_autogenerate`, then ``alembic upgrade head``; the revision's script."""
    script = _autogenerate(project, url, *message)
    _alembic(project, url, "upgrade", "head")
    return script


def _upgrade_body(script: str) -> list[str]:
    body = script.split("def upgrade")[1].split("def downgrade")[0]
    return [line.strip() for line in body.splitlines() if line.strip().startswith("op.")]


UNDECLARED = """
import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy_seqkeys import PooledSequence, TableSequence


class Base(DeclarativeBase):
    pass


# neither declares the sequences table (PooledSequence needs it on SQLite and MySQL)
inv = TableSequence("inv", mode="in_transaction")
order_id = PooledSequence("order_id", batch_size=50, metadata=Base.metadata)


class Invoice(Base):
    __tablename__ = "invoices"
    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, default=inv)


class Order(Base):
    __tablename__ = "orders"
    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, default=order_id)
"""


def _insert_three(project: Path, url: str) -> list[tuple[int, ...]]:
    with _session(project, url) as (models, session):
        session.add_all([models.Invoice() for _ in range(3)])
        session.add_all([models.Order() for _ in range(3)])
        session.commit()
        return [
            tuple(session.scalars(sa.select(model.id).order_by(model.id)))
            for model in (models.Invoice, models.Order)
        ]


@pytest.mark.parametrize("name", THREE)
def test_an_undeclared_sequences_table_is_never_dropped(
    name: str, engines: Any, tmp_path: Path
) -> None:
    with _new_project(engines, name, "alundecl", tmp_path, UNDECLARED) as url:
        first = _autogenerate_and_upgrade(tmp_path, url)
        assert "op.create_sequences_table()" in _upgrade_body(first)
        assert _insert_three(tmp_path, url) == [(1, 2, 3), (1, 2, 3)]

        check = _run(tmp_path, url, "-m", "alembic", "check")
        assert check.returncode == 0, check.stdout + check.stderr
        second = _autogenerate_and_upgrade(tmp_path, url)
        assert _upgrade_body(second) == []  # no drop_sequences_table
        invoices, orders = _insert_three(tmp_path, url)
        assert invoices == (1, 2, 3, 4, 5, 6)
        assert orders[:3] == (1, 2, 3)
        assert len(set(orders)) == 6


TWO_PHASES = """
import os

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy_seqkeys import PooledSequence, TableSequence, sequences_table


class Base(DeclarativeBase):
    pass


sequences_table(Base.metadata)
# the second phase adds the sequences as the defaults of tables that hold rows
LATER = os.path.exists(os.path.join(os.path.dirname(__file__), "later"))
extra = {"default": TableSequence("extra_no", mode="in_transaction")} if LATER else {}
order = {"default": PooledSequence("order_no", batch_size=10)} if LATER else {}


class Extra(Base):
    __tablename__ = "extras"
    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False, **extra)


class Order(Base):
    __tablename__ = "orders"
    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False, **order)
"""


#: :func:`_insert_one` in a process of its own (run in the project, its URL in the environment)
INSERT_ONE = """
import os

import sqlalchemy as sa
from sqlalchemy.orm import Session

import models

engine = sa.create_engine(os.environ["SEQKEYS_DATABASE_URL"])
with Session(engine) as session:
    extra, order = models.Extra(), models.Order()
    session.add_all([extra, order])
    session.commit()
    print(extra.id, order.id)
engine.dispose()
"""


def _insert_one(project: Path, url: str) -> tuple[int, int]:
    with _session(project, url) as (models, session):
        extra, order = models.Extra(), models.Order()
        session.add_all([extra, order])
        session.commit()
        return extra.id, order.id


@pytest.mark.parametrize("name", THREE)
def test_a_sequence_for_a_table_with_rows_is_resynced(
    name: str, engines: Any, tmp_path: Path
) -> None:
    """Autogenerate writes the resync; it holds after a downgrade and an upgrade again."""
    with _new_project(engines, name, "aldownup", tmp_path, TWO_PHASES) as url:
        _autogenerate_and_upgrade(tmp_path, url, "-m", "tables")
        engine = sa.create_engine(url)
        with engine.begin() as conn:  # rows with their keys, before the sequences exist
            for table in ("extras", "orders"):
                conn.execute(sa.text(f"INSERT INTO {table} (id) VALUES (1), (2), (3)"))
        engine.dispose()

        (tmp_path / "later").touch()
        script = _autogenerate_and_upgrade(tmp_path, url, "-m", "defaults")
        assert _upgrade_body(script) == [
            "op.create_table_sequence('extra_no', start=1)",
            "op.resync_table_sequence('extra_no', 'extras', 'id')",
            "op.create_pooled_sequence('order_no', 10)",
            "op.resync_pooled_sequence('order_no', 'orders', 'id')",
        ]
        assert "resync" not in script.split("def downgrade")[1]
        assert _insert_one(tmp_path, url) == (4, 4)

        _alembic(tmp_path, url, "downgrade", "-1")  # drops both sequences, keeps the rows
        _alembic(tmp_path, url, "upgrade", "head")
        # An application started after the migration: this process received keys up to
        # 13 of the sequence dropped since, and refuses the one made anew, which starts
        # below them (SequenceMovedBackwardsError: tests/backend/test_pooled_floor.py)
        inserted = _run(tmp_path, url, "-c", INSERT_ONE)
        assert inserted.returncode == 0, inserted.stderr
        assert inserted.stdout.split() == ["5", "5"]
        again = _autogenerate(tmp_path, url)
        assert _upgrade_body(again) == []


# -- a bit-reversed sequence in another schema -----------------------------------------


@contextlib.contextmanager
def _other_schema(engines: Any, name: str, engine: sa.Engine) -> Iterator[str]:
    if name == "postgresql":
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE SCHEMA other"))
        yield "other"  # dropped with the database
        return
    with engines.fresh_database(name, "alother") as other:  # MariaDB: a schema is a database
        database = sa.engine.make_url(other).database
        assert database is not None
        yield database


@pytest.mark.parametrize("name", ["postgresql", "mysql"])
def test_a_bit_reversed_sequence_keeps_its_schema(name: str, engines: Any) -> None:
    from alembic.autogenerate import produce_migrations, render_python_code

    with (
        database(engines, name, "alschema") as engine,
        _other_schema(engines, name, engine) as schema,
    ):
        models = sa.MetaData()
        account_id = BitReversedSequence("acct_id", schema=schema, metadata=models)
        accounts = sa.Table(
            "accounts",
            models,
            sa.Column(
                "id", sa.BigInteger, primary_key=True, autoincrement=False, default=account_id
            ),
        )
        with operations(engine) as op:
            context = MigrationContext.configure(
                op.get_bind(),
                opts={
                    "target_metadata": models,
                    "autogenerate_plugins": ["alembic.autogenerate.*", "seqkeys"],
                },
            )
            code = render_python_code(produce_migrations(context, models).upgrade_ops)
            expected = f"'acct_id', start_with_counter=1, schema={schema!r})"
            assert f"op.create_bit_reversed_sequence({expected}" in code
            namespace = {"op": op, "sa": sa, "sqlalchemy_seqkeys": sqlalchemy_seqkeys}
            script = "\n".join(line.strip() for line in code.splitlines())
            exec(script, namespace)  # the rendered migration
            inspector = sa.inspect(op.get_bind())
            assert "acct_id" in inspector.get_sequence_names(schema=schema)
            assert "acct_id" not in inspector.get_sequence_names()
            assert produce_migrations(context, models).upgrade_ops.is_empty()
            op.drop_bit_reversed_sequence("acct_id", schema=schema)
            assert "acct_id" not in sa.inspect(op.get_bind()).get_sequence_names(schema=schema)
            op.create_bit_reversed_sequence("acct_id", schema=schema)
        with engine.begin() as conn:
            conn.execute(accounts.insert())
            assert reverse_bits(conn.execute(sa.select(accounts.c.id)).scalar_one()) == 1


# -- names the engine cannot hold ------------------------------------------------------

LONG = {"postgresql": ["s" * 63 + "_a", "é" * 32], "mysql": ["s" * 63 + "_a"]}


@pytest.mark.parametrize("name", ["postgresql", "mysql"])
def test_a_table_name_too_long_for_the_engine_is_refused(name: str, engines: Any) -> None:
    limit = "at most 63 bytes" if name == "postgresql" else "at most 64 characters"
    with database(engines, name, "allong") as engine, operations(engine) as op:
        op.create_sequences_table()
        op.create_table_sequence("x")
        keys_table(op, "rows", 5)
        for long in LONG[name]:
            assert_every_operation_refuses(op, long, limit)
        assert sorted(sa.inspect(op.get_bind()).get_table_names()) == ["rows", "sequences"]
