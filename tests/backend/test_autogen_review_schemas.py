"""Sequences of one name in two schemas, through Alembic's own autogenerate (review): each is its
own native sequence, so autogenerate proposes both (before, only the last one declared, and the
inserts through the other failed while ``alembic check`` saw nothing), each followed by the
resync of the tables that use it. Where the counter is a sequences-table row (SQLite), the schema
is no part of it: one row, created once, and every table using it resynced.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import produce_migrations, render_python_code
from alembic.migration import MigrationContext
from alembic.operations import Operations

from sqlalchemy_seqkeys import BitReversedSequence, PooledSequence, reverse_bits
from sqlalchemy_seqkeys.alembic import declared_sequences
from sqlalchemy_seqkeys.alembic.pooled_ops import declared_pooled_sequences
from tests._helpers import fresh_database_engine as database
from tests.backend._autogen import autogenerate, op_lines, run
from tests.backend.test_alembic_hostile import operations

pytestmark = pytest.mark.backend

#: the keys each table holds (bit-reversed tables: their counters)
HELD = {"a": 3, "b": 5, "c": 4, "d": 7}


def _models(schema: str | None) -> sa.MetaData:
    """``a`` and ``b`` keyed by bit-reversed sequences ``ids``, ``c`` and ``d`` by pooled
    sequences ``pids``: ``a`` and ``c`` in the default schema, ``b`` and ``d`` in ``schema``
    (their sequences too)."""
    models = sa.MetaData()
    defaults = {
        "a": BitReversedSequence("ids"),
        "b": BitReversedSequence("ids", schema=schema),
        "c": PooledSequence("pids", batch_size=5),
        "d": PooledSequence("pids", batch_size=5, schema=schema),
    }
    for name, default in defaults.items():
        sa.Table(
            name,
            models,
            sa.Column("id", sa.BigInteger, primary_key=True, default=default),
            schema=schema if name in ("b", "d") else None,
        )
    return models


def test_both_are_declared() -> None:
    models = _models("billing")
    _, bit_reversed = declared_sequences([models])
    assert sorted(bit_reversed) == ["ids"]  # by name, as documented
    assert sorted(declared_pooled_sequences([models])) == ["pids"]


@contextlib.contextmanager
def _schema(engines: Any, name: str, engine: sa.Engine) -> Iterator[str]:
    """A second schema: PostgreSQL's ``billing``, or on MariaDB a second database."""
    if name == "postgresql":
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE SCHEMA billing")
        yield "billing"
        return
    with engines.fresh_database(name, "brschema") as url:
        database_name = sa.make_url(url).database
        assert database_name is not None
        yield database_name


def _autogenerate_in(op: Operations, models: sa.MetaData, schema: str) -> str:
    """The upgrade autogenerate writes comparing the default schema and ``schema``
    (``include_schemas``, the other schemas left out by ``include_name``)."""

    def include_name(name: str | None, type_: str, parent_names: object) -> bool:
        return type_ != "schema" or name in (None, schema)

    context = MigrationContext.configure(
        op.get_bind(),
        opts={
            "target_metadata": models,
            "include_schemas": True,
            "include_name": include_name,
            "autogenerate_plugins": ["alembic.autogenerate.*", "seqkeys"],
        },
    )
    return render_python_code(produce_migrations(context, models).upgrade_ops)


def _fill(engine: sa.Engine, models: sa.MetaData) -> None:
    with engine.begin() as conn:
        models.create_all(conn)  # the tables only: their sequences are attached to none
        for table in models.tables.values():
            counters = range(1, HELD[table.name] + 1)
            reversed_ = table.name in ("a", "b")
            conn.execute(
                table.insert(), [{"id": reverse_bits(c) if reversed_ else c} for c in counters]
            )


@pytest.mark.parametrize("name", ["postgresql", "mysql"])
def test_each_schema_gets_its_own_sequence_past_its_own_keys(name: str, engines: Any) -> None:
    with database(engines, name, "brsame") as engine, _schema(engines, name, engine) as schema:
        models = _models(schema)
        _fill(engine, models)
        with operations(engine) as op:
            code = _autogenerate_in(op, models, schema)
            lines = op_lines(code)
            for line in (
                "op.create_bit_reversed_sequence('ids', start_with_counter=1)",
                f"op.create_bit_reversed_sequence('ids', start_with_counter=1, schema={schema!r})",
                "op.create_pooled_sequence('pids', 5)",
                f"op.create_pooled_sequence('pids', 5, schema={schema!r})",
                "op.resync_bit_reversed_sequence('ids', 'a', 'id')",
                f"op.resync_bit_reversed_sequence('ids', 'b', 'id', schema={schema!r}, "
                f"sequence_schema={schema!r})",
                "op.resync_pooled_sequence('pids', 'c', 'id')",
                f"op.resync_pooled_sequence('pids', 'd', 'id', schema={schema!r}, "
                f"sequence_schema={schema!r})",
            ):
                assert line in lines, (line, lines)
            assert len(lines) == 8, lines
            run(op, code)
            assert not op_lines(_autogenerate_in(op, models, schema))  # alembic check
        for table in models.tables.values():
            with engine.begin() as conn:
                for _ in range(3):
                    conn.execute(table.insert())  # no missing sequence, no duplicate key
                keys = list(conn.scalars(sa.select(table.c.id)))
            assert len(set(keys)) == HELD[table.name] + 3, table.name
            if table.name in ("a", "b"):
                keys = [reverse_bits(k) for k in keys]
            assert min(sorted(keys)[HELD[table.name] :]) > HELD[table.name], table.name


def test_where_the_counter_is_a_row_it_is_created_once_and_every_user_resynced(
    engines: Any,
) -> None:
    """SQLite: the sequences' schema is no part of their row; the tables are all in one
    schema, keyed by sequences declared in two (a model shared with PostgreSQL)."""
    models = sa.MetaData()
    defaults = {
        "a": BitReversedSequence("ids"),
        "b": BitReversedSequence("ids", schema="billing"),
        "c": PooledSequence("pids", batch_size=5),
        "d": PooledSequence("pids", batch_size=5, schema="billing"),
    }
    for table_name, default in defaults.items():
        sa.Table(
            table_name, models, sa.Column("id", sa.BigInteger, primary_key=True, default=default)
        )
    with database(engines, "sqlite", "brsamerow") as engine:
        _fill(engine, models)
        with operations(engine) as op:
            code = autogenerate(op, models)
            lines = op_lines(code)
            creates = [line for line in lines if line.startswith("op.create_")]
            assert len(creates) == 3, lines  # the sequences table, one row each
            resynced = sorted(line.split("'")[3] for line in lines if "resync" in line)
            assert resynced == ["a", "b", "c", "d"], lines
            run(op, code)
            assert not op_lines(autogenerate(op, models))
        keys: dict[str, list[int]] = {}
        with engine.begin() as conn:
            for table in models.tables.values():
                conn.execute(table.insert())
                keys[table.name] = list(conn.scalars(sa.select(table.c.id)))
        for table_name, held in keys.items():
            assert len(set(held)) == HELD[table_name] + 1, table_name
        # one counter each: a and b share it, so do c and d; neither hands out a held key
        ids = sorted(reverse_bits(k) for k in keys["a"] + keys["b"])
        assert ids[-2:] == [HELD["b"] + 1, HELD["b"] + 2]
        pids = sorted(keys["c"] + keys["d"])
        assert pids[-1] > HELD["d"]
