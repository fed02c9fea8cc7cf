"""server_uuid() on the live engines: the server mints the key, the ORM reads it back.

PostgreSQL 18 (uuidv7()), MariaDB 10.11 (UUID() into its UUID type) and the
Spanner emulator (GENERATE_UUID()) mint keys for rows inserted without one,
through Core, Session.add_all of thousands of objects (with and without an
insert sentinel) and AsyncSession; each object gets its own row's key. On
MariaDB and PostgreSQL 18 the keys read back ORDER BY id come in insertion
order. PostgreSQL 15 and SQLite refuse the DDL before anything is sent.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, orm_insert_sentinel

from sqlalchemy_seqkeys import CombGuid, UnsupportedServerFunctionError, server_uuid
from tests.conftest import AsyncDatabase

pytestmark = pytest.mark.backend

ROWS = 3000


#: the suite's engines whose server mints a server_uuid(), and those that refuse it
SERVING = ("postgresql18", "mysql", "spanner")
REFUSING = ("sqlite", "postgresql")  # PostgreSQL 15


@pytest.fixture(params=SERVING)
def serving_engine(request: pytest.FixtureRequest, engines: Any) -> Engine:
    return engines.get(request.param)  # type: ignore[no-any-return]


@pytest.fixture(params=REFUSING)
def refusing_engine(request: pytest.FixtureRequest, engines: Any) -> Engine:
    return engines.get(request.param)  # type: ignore[no-any-return]


def time_ordered(engine: Engine) -> bool:
    return engine.dialect.name != "spanner+spanner"  # random on purpose there


def make_model(sentinel: bool) -> tuple[type[Any], sa.MetaData]:
    class Base(DeclarativeBase):
        pass

    class Event(Base):
        __tablename__ = "seqkeys_server_uuid_events"
        # CombGuid(native_uuid=True): MariaDB's UUID type; UUID, STRING(36) elsewhere
        id: Mapped[uuid.UUID] = mapped_column(
            CombGuid(native_uuid=True), primary_key=True, server_default=server_uuid()
        )
        n: Mapped[int] = mapped_column(sa.BigInteger)
        if sentinel:
            _sentinel: Mapped[int] = orm_insert_sentinel()

    return Event, Base.metadata


@pytest.fixture(params=[False, True], ids=["no-sentinel", "sentinel"])
def model(request: pytest.FixtureRequest, serving_engine: Engine) -> Iterator[Any]:
    event, metadata = make_model(request.param)
    metadata.drop_all(serving_engine)
    metadata.create_all(serving_engine)
    yield event
    metadata.drop_all(serving_engine)


def test_refused_before_anything_is_sent(refusing_engine: Engine) -> None:
    event, metadata = make_model(False)
    with pytest.raises(UnsupportedServerFunctionError, match="default=new_uuid7"):
        metadata.create_all(refusing_engine)
    with refusing_engine.connect() as conn:
        assert not sa.inspect(conn).has_table(event.__tablename__)


def check_keys(engine: Engine, model: Any, flushed: dict[int, uuid.UUID]) -> None:
    with Session(engine) as session:
        in_db: dict[int, uuid.UUID] = dict(session.execute(sa.select(model.n, model.id)).all())
        by_key = list(session.scalars(sa.select(model.n).order_by(model.id)))
    assert flushed == in_db  # every object got its own row's key
    assert len(set(in_db.values())) == len(in_db)
    assert all(isinstance(key, uuid.UUID) for key in in_db.values())
    if time_ordered(engine):
        assert by_key == sorted(by_key)  # ORDER BY id is insertion order


def test_session_add_all_of_thousands(serving_engine: Engine, model: Any) -> None:
    engine = serving_engine
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    objects = [model(n=i) for i in range(ROWS)]
    with Session(engine) as session:
        session.add_all(objects)
        sa.event.listen(engine, "before_cursor_execute", record)
        try:
            session.flush()
        finally:
            sa.event.remove(engine, "before_cursor_execute", record)
        flushed = {o.n: o.id for o in objects}
        session.commit()
    assert statements
    assert all(s.lstrip().upper().startswith("INSERT") for s in statements)
    if "_sentinel" in model.__table__.c:
        # batches of many rows, each returned key matched to its object by the sentinel
        assert len(statements) <= ROWS // 100, len(statements)
    else:  # SQLAlchemy cannot match a server's key to its object in a batch: a row a statement
        assert len(statements) == ROWS
    check_keys(engine, model, flushed)


def test_core_insert_returning_in_order(serving_engine: Engine, model: Any) -> None:
    engine = serving_engine
    table = model.__table__
    with engine.begin() as conn:
        keys = []
        for n in range(200):  # one at a time: each key is this row's
            keys.append(
                conn.execute(sa.insert(table).values(n=n).returning(table.c.id)).scalar_one()
            )
    check_keys(engine, model, dict(enumerate(keys)))


def test_mariadb_stores_uuid1_time_first(mysql_engine: Engine) -> None:
    """MariaDB's UUID() is version 1; its UUID type keeps it sorted by time."""
    if not mysql_engine.dialect.is_mariadb:  # type: ignore[attr-defined]
        pytest.skip("MySQL has no UUID type")
    event, metadata = make_model(False)
    metadata.create_all(mysql_engine)
    try:
        with mysql_engine.connect() as conn:
            ddl = conn.execute(sa.text(f"SHOW CREATE TABLE {event.__tablename__}")).one()[1]
        assert "`id` uuid NOT NULL DEFAULT uuid()" in ddl, ddl
        with Session(mysql_engine) as session:
            session.add_all([event(n=i) for i in range(50)])
            session.commit()
            keys = list(session.scalars(sa.select(event.id).order_by(event.id)))
        assert {key.version for key in keys} == {1}
        assert [key.time for key in keys] == sorted(key.time for key in keys)
    finally:
        metadata.drop_all(mysql_engine)


def test_async_session_add_all(async_database: AsyncDatabase) -> None:
    event, metadata = make_model(True)
    sync = async_database.sync
    version = sync.dialect.server_version_info or ()
    postgresql_18 = sync.dialect.name == "postgresql" and version >= (18,)
    if not (postgresql_18 or async_database.backend == "mysql"):
        with pytest.raises(UnsupportedServerFunctionError):  # SQLite, PostgreSQL 15
            metadata.create_all(sync)
        return
    metadata.drop_all(sync)
    metadata.create_all(sync)

    async def main() -> dict[int, uuid.UUID]:
        engine = async_database.engine()
        try:
            async with AsyncSession(engine) as session:
                objects = [event(n=i) for i in range(1000)]
                session.add_all(objects)
                await session.flush()
                flushed = {o.n: o.id for o in objects}
                await session.commit()
            return flushed
        finally:
            await engine.dispose()

    try:
        check_keys(sync, event, asyncio.run(main()))
    finally:
        metadata.drop_all(sync)


def test_autogenerate_sees_no_difference(serving_engine: Engine, model: Any) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    import sqlalchemy_seqkeys.alembic
    import sqlalchemy_seqkeys.alembic.spanner

    sqlalchemy_seqkeys.alembic.register()  # where Alembic has not loaded the plugin
    # Under pytest the plugin can be set up while sqlalchemy-spanner cannot be
    # imported yet, which skips its reflection patch: apply it (idempotent)
    sqlalchemy_seqkeys.alembic.spanner.register()
    with serving_engine.connect() as conn:
        ours = model.__tablename__  # other tests' tables may share the database
        opts = {
            "compare_server_default": True,
            "autogenerate_plugins": ["alembic.autogenerate.*", "seqkeys"],  # as env.py names it
            "include_name": lambda name, type_, parents: type_ != "table" or name == ours,
        }
        diffs = compare_metadata(MigrationContext.configure(conn, opts=opts), model.metadata)
    assert diffs == []


def test_autogenerate_renders_server_uuid_itself() -> None:
    from alembic.autogenerate import render_python_code
    from alembic.operations import ops

    import sqlalchemy_seqkeys.alembic

    event, _ = make_model(False)
    code = render_python_code(
        ops.UpgradeOps(ops=[ops.CreateTableOp.from_table(event.__table__)]),
        render_item=sqlalchemy_seqkeys.alembic.render_item,  # type: ignore[arg-type]
    )
    assert "server_default=sqlalchemy_seqkeys.server_uuid()" in code
