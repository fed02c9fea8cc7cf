"""A shard column added to an existing table through Alembic, online and offline.

Alembic's ``op.add_column`` puts the new column in a stand-in ``Table`` that holds it
alone; the check that a shard column's hashed columns exist leaves that table to its
CREATE TABLE (which never comes), and still refuses a model's table that lacks them.
The ``add_column`` autogenerate writes runs on every engine, and the recipe of
docs/strategies/shard-ids.md gives the rows already there their shard ids.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import produce_migrations, render_python_code
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.engine import Engine

import sqlalchemy_seqkeys
import sqlalchemy_seqkeys.alembic
from sqlalchemy_seqkeys import InvalidShardError, ShardId, spanner_shard_column
from tests._markdown import code_blocks
from tests._shard_fixtures import (
    LOGS,
    insert_filling,
    migrate,
    new_logs,
    old_logs,
    shard_logs_engine,  # noqa: F401 - the logs_engine fixture
)

sqlalchemy_seqkeys.alembic.register()

pytestmark = pytest.mark.backend

PAGE = Path(__file__).parent.parent.parent / "docs" / "strategies" / "shard-ids.md"
SHARD = ShardId("user_id", shards=32)
TABLE = LOGS  # "logs": the docs' recipe names it


def stored_shards(engine: Engine) -> dict[int, int]:
    with engine.connect() as conn:
        rows = conn.execute(sa.text(f"SELECT user_id, shard FROM {TABLE}")).all()
    return dict(rows)


# -- the check -----------------------------------------------------------------


def test_alembics_stand_in_table_is_not_refused() -> None:
    # what op.add_column builds: the table's name, a MetaData of its own, the new column
    stand_in = sa.Table(TABLE, sa.MetaData(), spanner_shard_column("shard", "user_id", shards=32))
    assert list(stand_in.c.keys()) == ["shard"]
    default = sa.Table(
        TABLE, sa.MetaData(), sa.Column("shard", sa.BigInteger, default=ShardId("a", shards=4))
    )
    assert list(default.c.keys()) == ["shard"]


def test_a_model_table_without_the_hashed_column_is_still_refused() -> None:
    with pytest.raises(InvalidShardError, match=r"column t\.shard hashes 'user_id'"):
        sa.Table(
            "t",
            sa.MetaData(),
            spanner_shard_column("shard", "user_id", shards=32),
            sa.Column("id", sa.BigInteger, primary_key=True),
        )
    # a table of the shard column alone is refused when it is created
    alone = sa.Table(
        "seqkeys_shard_alone",
        sa.MetaData(),
        spanner_shard_column("shard", "user_id", shards=32, primary_key=True),
    )
    engine = sa.create_engine("sqlite://")
    with pytest.raises(InvalidShardError, match=r"column seqkeys_shard_alone\.shard hashes"):
        alone.create(engine)
    assert not sa.inspect(engine).has_table("seqkeys_shard_alone")
    # and so is one that gets its other columns later, without the hashed one
    later = sa.Table(
        "seqkeys_shard_later",
        sa.MetaData(),
        spanner_shard_column("shard", "user_id", shards=32),
    )
    later.append_column(sa.Column("id", sa.BigInteger, primary_key=True))
    with pytest.raises(InvalidShardError, match="hashes 'user_id'"):
        later.create(engine)


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql", "mysql", "mariadb", "spanner+spanner"])
def test_add_column_offline(dialect: str) -> None:
    buffer = io.StringIO()
    context = MigrationContext.configure(
        dialect_name=dialect, opts={"as_sql": True, "output_buffer": buffer}
    )
    Operations(context).add_column(TABLE, spanner_shard_column("shard", "user_id", shards=32))
    sql = " ".join(buffer.getvalue().split())
    if dialect.startswith("spanner"):
        assert sql == (
            "ALTER TABLE logs ADD COLUMN shard INT64 NOT NULL AS "
            "(MOD(FARM_FINGERPRINT(CAST(user_id AS STRING)), 32)) STORED;"
        )
    else:
        assert "ADD" in sql
        assert "shard BIGINT NOT NULL" in sql
        assert "FARM" not in sql


# -- on the engines ------------------------------------------------------------


def test_the_add_column_autogenerate_writes_runs(logs_engine: Engine) -> None:
    engine = logs_engine
    old_logs(sa.MetaData()).create(engine)
    with engine.connect() as conn:
        context = MigrationContext.configure(
            conn,
            opts={
                "render_item": sqlalchemy_seqkeys.alembic.render_item,
                "render_as_batch": True,
            },
        )
        script = render_python_code(
            produce_migrations(context, new_logs(sa.MetaData(), shards=32).metadata).upgrade_ops,
            render_item=sqlalchemy_seqkeys.alembic.render_item,
        )
    assert "sqlalchemy_seqkeys.spanner_shard_column('shard', 'user_id', shards=32" in script
    body = "\n".join(line[4:] for line in script.splitlines() if not line.startswith("# "))

    def run(op: Operations) -> None:
        exec(body, {"op": op, "sa": sa, "sqlalchemy_seqkeys": sqlalchemy_seqkeys})

    migrate(engine, run, render_as_batch=True)
    rows = [{"user_id": u, "note": "x"} for u in (1, 2, 3, -7)]
    insert_filling(engine, new_logs(sa.MetaData(), shards=32), rows)
    assert stored_shards(engine) == {u: SHARD.of(u) for u in (1, 2, 3, -7)}


def recipe(shards: int = 32) -> dict[str, Any]:
    """The namespace of the docs' recipe with ``shards``: Changing N's ``upgrade``, and
    ``add_upgrade``, the ``upgrade`` of "Adding a shard column to a table with rows"."""
    blocks = [b.code for b in code_blocks(PAGE) if b.lang == "python"]
    (adding,) = [b for b in blocks if "def add_shard_column" in b]
    (changing,) = [b for b in blocks if 'op.drop_column("logs", "shard")' in b]
    assert adding.count("shards=32") == 3  # SHARD and both columns: set to the new N
    namespace: dict[str, Any] = {}
    exec(adding.replace("shards=32", f"shards={shards}"), namespace)
    namespace["add_upgrade"] = namespace["upgrade"]
    exec(changing, namespace)
    return namespace


def test_the_docs_recipe_gives_existing_rows_their_shard_ids(logs_engine: Engine) -> None:
    engine = logs_engine
    table = old_logs(sa.MetaData())
    table.create(engine)
    users = [1, 2, 3, -7, 2**62]
    with engine.begin() as conn:
        conn.execute(sa.insert(table), [{"user_id": u, "note": "x"} for u in users])
    migrate(engine, lambda op: recipe()["add_upgrade"](), render_as_batch=True)
    assert stored_shards(engine) == {u: SHARD.of(u) for u in users}
    columns = {c["name"]: c for c in sa.inspect(engine).get_columns(TABLE)}
    assert columns["shard"]["nullable"] is False

    # Changing N: every row gets the new N's id
    migrate(engine, lambda op: recipe(5)["upgrade"](), render_as_batch=True)
    assert stored_shards(engine) == {u: ShardId("user_id", shards=5).of(u) for u in users}
    columns = {c["name"]: c for c in sa.inspect(engine).get_columns(TABLE)}
    assert columns["shard"]["nullable"] is False
