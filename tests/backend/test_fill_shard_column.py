"""``op.fill_shard_column``, and the migration autogenerate writes for a shard column added
to a table that holds rows.

Elsewhere than on Spanner the library fills a shard column on INSERT, so the rows a table
holds when the column is added have no shard id: PostgreSQL and SQLite refused the
``NOT NULL`` column autogenerate wrote, and MariaDB gave every row 0, which is not its shard
id. Autogenerate now writes the column nullable, ``op.fill_shard_column`` and the
``NOT NULL``; the fill gives each row the value an INSERT through an engine that opted in
would have given it.
"""

from __future__ import annotations

import enum
import io
from collections.abc import Callable, Iterator
from datetime import date, datetime, timedelta, timezone
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import produce_migrations, render_python_code
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.engine import Engine

import sqlalchemy_seqkeys
import sqlalchemy_seqkeys.alembic
from sqlalchemy_seqkeys import MigrationError, ShardId, spanner_shard_column
from tests._helpers import fresh_database_engine

sqlalchemy_seqkeys.alembic.register()

pytestmark = pytest.mark.backend

TABLE = "fill_logs"
TYPED = "fill_typed"
SHARD = ShardId("user_id", shards=16)
#: more than one batch of the fill (1,000 rows), negative and large keys among them
USERS = [*range(1, 1201), -7, -(2**40), 2**62]


def is_spanner(engine: Engine) -> bool:
    return engine.dialect.name.startswith("spanner")


def drop(engine: Engine) -> None:
    for name in (TABLE, TYPED):
        sa.Table(name, sa.MetaData()).drop(engine, checkfirst=True)


@pytest.fixture(params=["sqlite", "postgresql", "mysql", "spanner"])
def engine(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    """An engine on a database of its own: autogenerate sees only this module's tables."""
    with fresh_database_engine(engines, request.param, "fill") as found:
        yield found


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def filled_engine(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    """As ``engine``, on the engines where the library fills the shard column."""
    with fresh_database_engine(engines, request.param, "fill") as found:
        yield found


def old_logs(metadata: sa.MetaData) -> sa.Table:
    """The table before the shard column."""
    return sa.Table(
        TABLE,
        metadata,
        sa.Column("user_id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("note", sa.String(20)),
    )


def new_logs(metadata: sa.MetaData, **shard_kw: Any) -> sa.Table:
    """The table as the model has it now: a shard column, NOT NULL unless ``shard_kw`` says."""
    return sa.Table(
        TABLE,
        metadata,
        sa.Column("user_id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("note", sa.String(20)),
        spanner_shard_column("shard", "user_id", shards=16, **shard_kw),
    )


def with_rows(engine: Engine) -> None:
    table = old_logs(sa.MetaData())
    table.create(engine)
    with engine.begin() as conn:
        conn.execute(sa.insert(table), [{"user_id": u, "note": "x"} for u in USERS])


def migrate(engine: Engine, run: Callable[[Operations], object], **opts: Any) -> None:
    """``run(op)`` in an Alembic migration on ``engine`` (Spanner's DDL is not transactional)."""
    autocommit = {"isolation_level": "AUTOCOMMIT"} if is_spanner(engine) else {}
    with engine.connect().execution_options(**autocommit) as conn:
        context = MigrationContext.configure(conn, opts=opts)
        with Operations.context(context) as op:
            run(op)
        if not is_spanner(engine):
            conn.commit()


def autogenerate(engine: Engine, metadata: sa.MetaData, batch: bool) -> tuple[str, str]:
    """The bodies of the upgrade and the downgrade autogenerate writes for ``metadata``."""
    opts = {"render_item": sqlalchemy_seqkeys.alembic.render_item, "render_as_batch": batch}
    plugins = {"autogenerate_plugins": ["alembic.autogenerate.*", "seqkeys"]}
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={**opts, **plugins})
        script = produce_migrations(context, metadata)
    upgrade, downgrade = (
        render_python_code(ops, **opts)  # type: ignore[arg-type]
        for ops in (script.upgrade_ops, script.downgrade_ops)
    )
    return upgrade, downgrade


def body(script: str) -> str:
    """The script's statements, without Alembic's comments."""
    return "\n".join(line[4:] for line in script.splitlines() if not line.strip().startswith("#"))


def run_script(engine: Engine, script: str) -> None:
    def run(op: Operations) -> None:
        exec(body(script), {"op": op, "sa": sa, "sqlalchemy_seqkeys": sqlalchemy_seqkeys})

    migrate(engine, run)


def stored(engine: Engine, table: str = TABLE, key: str = "user_id") -> dict[Any, Any]:
    with engine.connect() as conn:
        rows = conn.execute(sa.text(f"SELECT {key}, shard FROM {table}")).all()
    return dict(rows)  # type: ignore[arg-type]


def columns_of(engine: Engine, table: str = TABLE) -> dict[str, Any]:
    return {c["name"]: c for c in sa.inspect(engine).get_columns(table)}


# -- what autogenerate writes --------------------------------------------------------


@pytest.mark.parametrize("batch", [True, False], ids=["batch", "plain"])
def test_the_autogenerated_upgrade_gives_existing_rows_their_shard_ids(
    engine: Engine, batch: bool
) -> None:
    with_rows(engine)
    upgrade, downgrade = autogenerate(engine, new_logs(sa.MetaData()).metadata, batch)
    run_script(engine, upgrade)
    assert stored(engine) == {u: SHARD.of(u) for u in USERS}
    assert columns_of(engine)["shard"]["nullable"] is False
    # the rows inserted afterwards are filled on INSERT, as before
    filling = sa.create_engine(engine.url, plugins=["seqkeys_shards"])
    if is_spanner(engine):
        from tests._emulator import configure_engine

        configure_engine(filling)
    try:
        with filling.begin() as conn:
            conn.execute(sa.insert(new_logs(sa.MetaData())), [{"user_id": 5000, "note": "y"}])
    finally:
        filling.dispose()
    assert stored(engine)[5000] == SHARD.of(5000)
    run_script(engine, downgrade)
    assert "shard" not in columns_of(engine)
    assert len(stored_users(engine)) == len(USERS) + 1


def stored_users(engine: Engine) -> list[int]:
    with engine.connect() as conn:
        return list(conn.execute(sa.text(f"SELECT user_id FROM {TABLE}")).scalars())


NOT_NULL = [
    f"with op.batch_alter_table('{TABLE}', schema=None) as batch_op:",
    "batch_op.alter_column('shard', existing_type=sa.BigInteger(), nullable=False)",
]


@pytest.mark.parametrize("batch", [True, False], ids=["batch", "plain"])
def test_what_autogenerate_writes(engine: Engine, batch: bool) -> None:
    old_logs(sa.MetaData()).create(engine)
    upgrade, downgrade = autogenerate(engine, new_logs(sa.MetaData()).metadata, batch)
    lines = [line.strip() for line in body(upgrade).splitlines() if line.strip()]
    column = "sqlalchemy_seqkeys.spanner_shard_column('shard', 'user_id', shards=16"
    if is_spanner(engine):  # the server computes the column for every row
        add = "batch_op.add_column(" if batch else f"op.add_column('{TABLE}', "
        assert lines[-1] == f"{add}{column}, nullable=False))"
        return
    # outside a batch block, whatever the mode: SQLite's batch would copy the table
    # into one whose shard column the INSERT filling refuses to fill from a SELECT
    assert lines == [
        f"op.add_column('{TABLE}', {column}, nullable=True))",
        f"op.fill_shard_column('{TABLE}', 'shard', ['user_id'], shards=16)",
        *NOT_NULL,
    ]
    down = [line.strip() for line in body(downgrade).splitlines() if line.strip()]
    assert down == [f"op.drop_column('{TABLE}', 'shard')"]


def test_the_other_operations_on_the_table_keep_their_order(filled_engine: Engine) -> None:
    engine = filled_engine
    old_logs(sa.MetaData()).create(engine)
    metadata = sa.MetaData()
    sa.Table(
        TABLE,
        metadata,
        sa.Column("user_id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("note", sa.String(20)),
        sa.Column("before", sa.Integer),
        spanner_shard_column("shard", "user_id", shards=16, comment="the shard"),
        sa.Column("after", sa.Integer),
        sa.Index("ix_shard", "shard"),
    )
    upgrade, _ = autogenerate(engine, metadata, batch=True)
    lines = [line.strip() for line in body(upgrade).splitlines() if line.strip()]
    block = f"with op.batch_alter_table('{TABLE}', schema=None) as batch_op:"
    assert lines == [
        block,
        "batch_op.add_column(sa.Column('before', sa.Integer(), nullable=True))",
        f"op.add_column('{TABLE}', sqlalchemy_seqkeys.spanner_shard_column('shard', 'user_id', "
        "shards=16, nullable=True))",
        f"op.fill_shard_column('{TABLE}', 'shard', ['user_id'], shards=16)",
        block,
        "batch_op.alter_column('shard', existing_type=sa.BigInteger(), nullable=False, "
        "existing_comment='the shard')",
        block,
        "batch_op.add_column(sa.Column('after', sa.Integer(), nullable=True))",
        "batch_op.create_index('ix_shard', ['shard'], unique=False)",
    ]
    with engine.begin() as conn:
        conn.execute(
            sa.insert(old_logs(sa.MetaData())), [{"user_id": u, "note": "x"} for u in (1, 2)]
        )
    run_script(engine, upgrade)
    assert stored(engine) == {1: SHARD.of(1), 2: SHARD.of(2)}
    assert {"ix_shard"} <= {i["name"] for i in sa.inspect(engine).get_indexes(TABLE)}


def test_a_nullable_shard_column_is_filled_and_stays_nullable(filled_engine: Engine) -> None:
    engine = filled_engine
    with_rows(engine)
    metadata = new_logs(sa.MetaData(), nullable=True, non_negative=True).metadata
    upgrade, _ = autogenerate(engine, metadata, batch=True)
    assert "alter_column" not in upgrade
    assert "fill_shard_column('fill_logs', 'shard', ['user_id'], shards=16, non_negative=True)" in (
        upgrade
    )
    run_script(engine, upgrade)
    positive = ShardId("user_id", shards=16, non_negative=True)
    assert stored(engine) == {u: positive.of(u) for u in USERS}
    assert columns_of(engine)["shard"]["nullable"] is True


def test_a_key_other_than_the_name_is_written_by_name(filled_engine: Engine) -> None:
    engine = filled_engine
    old = sa.Table(
        TABLE,
        sa.MetaData(),
        sa.Column("UserId", sa.BigInteger, primary_key=True, autoincrement=False),
    )
    old.create(engine)
    with engine.begin() as conn:
        conn.execute(sa.insert(old), [{"UserId": 1}, {"UserId": 2}])
    metadata = sa.MetaData()
    new = sa.Table(
        TABLE,
        metadata,
        sa.Column("UserId", sa.BigInteger, key="user_id", primary_key=True, autoincrement=False),
        spanner_shard_column("shard", "user_id", shards=16),
    )
    upgrade, _ = autogenerate(engine, metadata, batch=True)
    assert "fill_shard_column('fill_logs', 'shard', ['UserId'], shards=16)" in upgrade
    run_script(engine, upgrade)
    with engine.connect() as conn:
        rows = dict(conn.execute(sa.select(new.c.user_id, new.c.shard)).all())
    assert rows == {1: SHARD.of(1), 2: SHARD.of(2)}


# -- the operation -----------------------------------------------------------------


class Color(enum.Enum):
    red = 1
    light_blue = 2


def typed(metadata: sa.MetaData, dialect: str) -> sa.Table:
    """Hashed columns of each type the library hashes by its type, a key of two columns."""
    extra = []
    if dialect == "postgresql":  # where the stored value keeps its instant
        extra = [sa.Column("at", sa.DateTime(timezone=True), nullable=False)]
    hashed = ["n", "s", "b", "c", "d", *(c.name for c in extra)]
    return sa.Table(
        TYPED,
        metadata,
        sa.Column("k1", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("k2", sa.String(10), primary_key=True),
        sa.Column("n", sa.BigInteger, nullable=False),
        sa.Column("s", sa.String(30), nullable=False),
        sa.Column("b", sa.Boolean, nullable=False),
        sa.Column("c", sa.Enum(Color), nullable=False),
        sa.Column("d", sa.Date, nullable=False),
        *extra,
        spanner_shard_column("shard", *hashed, shards=1000),
    )


def typed_rows(dialect: str) -> list[dict[str, Any]]:
    zone = timezone(timedelta(hours=5, minutes=30))
    rows = []
    for i in range(7):
        row = {
            "k1": i % 3,
            "k2": f"k{i}",
            "n": -(10**i) if i % 2 else 10**i,
            "s": f"text {i} é",
            "b": i % 2 == 0 if i != 3 else 1,  # 1: hashed as true
            "c": Color.light_blue if i % 2 else Color.red,
            "d": date(2024, 1, 1 + i),
        }
        if dialect == "postgresql":
            row["at"] = datetime(2024, 3, 10, 1 + i, 30, tzinfo=zone)
        rows.append(row)
    return rows


def test_the_fill_equals_what_an_insert_gives(filled_engine: Engine) -> None:
    engine = filled_engine
    dialect = engine.dialect.name
    table = typed(sa.MetaData(), dialect)
    filling = sa.create_engine(engine.url, plugins=["seqkeys_shards"])
    try:
        table.create(filling)
        with filling.begin() as conn:
            conn.execute(sa.insert(table), typed_rows(dialect))
    finally:
        filling.dispose()
    key = sa.text("k2")
    with engine.connect() as conn:
        inserted = dict(conn.execute(sa.select(key, sa.text("shard")).select_from(table)).all())
    assert len(set(inserted.values())) > 3
    with engine.begin() as conn:  # wrong ids, as MariaDB's 0 of the former migration
        conn.execute(sa.text(f"UPDATE {TYPED} SET shard = 0"))
    hashed = [c.key for c in table.c if c.key not in {"k1", "k2", "shard"}]
    migrate(
        engine,
        lambda op: op.fill_shard_column(TYPED, "shard", hashed, shards=1000, batch_size=2),
    )
    assert stored(engine, TYPED, "k2") == inserted


def test_spanner_computes_the_column_itself(engines: Any) -> None:
    engine = engines.get("spanner")
    drop(engine)
    try:
        with_rows(engine)
        migrate(
            engine,
            lambda op: op.add_column(TABLE, spanner_shard_column("shard", "user_id", shards=16)),
        )
        migrate(engine, lambda op: op.fill_shard_column(TABLE, "shard", ["user_id"], shards=16))
        assert stored(engine) == {u: SHARD.of(u) for u in USERS}
    finally:
        drop(engine)


def test_what_the_fill_refuses(filled_engine: Engine) -> None:
    engine = filled_engine

    def fill(table: str = TABLE, column: str = "shard", columns: Any = ("user_id",)) -> None:
        migrate(engine, lambda op: op.fill_shard_column(table, column, list(columns), shards=16))

    with pytest.raises(MigrationError, match=r"there is no table 'fill_logs'"):
        fill()
    with_rows(engine)
    with pytest.raises(MigrationError, match=r"has no column 'shard'.*op\.add_column"):
        fill()
    migrate(
        engine,
        lambda op: op.add_column(
            TABLE, spanner_shard_column("shard", "user_id", shards=16, nullable=True)
        ),
    )
    with pytest.raises(MigrationError, match=r"has no column 'uid' to hash.*user_id"):
        fill(columns=["uid"])
    with pytest.raises(MigrationError, match=r"'shard' is one of the columns it hashes"):
        fill(columns=["shard"])
    keyless = sa.Table(
        TYPED, sa.MetaData(), sa.Column("user_id", sa.BigInteger), sa.Column("shard", sa.BigInteger)
    )
    keyless.create(engine)
    with pytest.raises(MigrationError, match=r"no primary key"):
        fill(table=TYPED)
    assert set(stored(engine).values()) == {None}  # nothing filled by the refusals

    sa.Table(TYPED, sa.MetaData()).drop(engine)
    naive = sa.Table(
        TYPED,
        sa.MetaData(),
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("at", sa.DateTime, nullable=True),
        sa.Column("shard", sa.BigInteger),
    )
    naive.create(engine)
    with engine.begin() as conn:
        conn.execute(sa.insert(naive), [{"id": 1, "at": datetime(2024, 1, 1)}])
    with pytest.raises(MigrationError, match=r"row \(1,\) of table 'fill_typed'.*no time zone"):
        fill(table=TYPED, columns=["at"])
    with engine.begin() as conn:
        conn.execute(sa.update(naive).values(at=None))
    with pytest.raises(MigrationError, match=r"row \(1,\) of table 'fill_typed'.*NULL"):
        fill(table=TYPED, columns=["at"])


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql", "mysql", "mariadb"])
def test_offline_the_fill_is_refused(dialect: str) -> None:
    context = MigrationContext.configure(
        dialect_name=dialect, opts={"as_sql": True, "output_buffer": io.StringIO()}
    )
    with pytest.raises(MigrationError, match=r"reads the rows.*without --sql"):
        Operations(context).fill_shard_column(TABLE, "shard", ["user_id"], shards=16)


def test_offline_on_spanner_there_is_nothing_to_fill() -> None:
    buffer = io.StringIO()
    context = MigrationContext.configure(
        dialect_name="spanner+spanner", opts={"as_sql": True, "output_buffer": buffer}
    )
    Operations(context).fill_shard_column(TABLE, "shard", ["user_id"], shards=16)
    assert buffer.getvalue().strip() == ""


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"columns": "user_id"}, r"columns must be a list of column names.*\['user_id'\]"),
        ({"columns": []}, r"at least one column"),
        ({"columns": ["user_id", 3]}, r"a column to hash must be"),
        ({"shards": 0}, r"shards must be"),
        ({"non_negative": "yes"}, r"non_negative must be"),
        ({"batch_size": 0}, r"batch_size must be"),
        ({"table_name": ""}, r"table_name must be"),
        ({"column_name": None}, r"column_name must be"),
        ({"schema": 5}, r"schema must be"),
    ],
)
def test_bad_arguments_are_refused(kwargs: dict[str, Any], message: str) -> None:
    arguments: dict[str, Any] = {
        "table_name": TABLE,
        "column_name": "shard",
        "columns": ["user_id"],
        "shards": 16,
        **kwargs,
    }
    context = MigrationContext.configure(
        dialect_name="spanner+spanner", opts={"as_sql": True, "output_buffer": io.StringIO()}
    )
    with pytest.raises(MigrationError, match=message):
        Operations(context).fill_shard_column(**arguments)


def test_how_the_operation_renders_and_reads() -> None:
    fill = sqlalchemy_seqkeys.alembic.FillShardColumnOp(
        "logs", "shard", ("a", "b"), 8, True, "s", 10
    )
    assert fill.render() == (
        "op.fill_shard_column('logs', 'shard', ['a', 'b'], shards=8, non_negative=True, "
        "schema='s', batch_size=10)"
    )
    assert fill.to_diff_tuple() == ("FillShardColumnOp", "logs")
    assert "the shard id an INSERT would have given it" in " ".join(
        (Operations.fill_shard_column.__doc__ or "").split()
    )
    assert ":param batch_size:" in (Operations.fill_shard_column.__doc__ or "")


def test_alembic_check_reports_the_fill(filled_engine: Engine) -> None:
    from alembic.autogenerate import compare_metadata

    engine = filled_engine
    old_logs(sa.MetaData()).create(engine)
    plugins = {"autogenerate_plugins": ["alembic.autogenerate.*", "seqkeys"]}
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts=plugins)
        diffs = compare_metadata(context, new_logs(sa.MetaData()).metadata)
    assert [d[0] for d in diffs] == ["add_column", "FillShardColumnOp"]
