"""TypeID keys on every engine: ORM, Core, asyncio and Alembic autogenerate.

The column stores the UUID in CombGuid's 16-byte form (native ``uuid`` on
PostgreSQL, ``BINARY(16)`` on MariaDB, ``BLOB`` on SQLite, ``BYTES(16)`` on
Spanner) and gives back TypeID objects with the column's prefix.
"""

from __future__ import annotations

import asyncio
import textwrap
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import produce_migrations, render_python_code
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import sqlalchemy_seqkeys
import sqlalchemy_seqkeys.alembic
from sqlalchemy_seqkeys import InvalidTypeIDError, TypeID, TypeIDType, new_typeid, typeid_default
from sqlalchemy_seqkeys._dialect import mariadb_uuid_keeps_v7_order
from tests.conftest import ENGINE_NAMES, AsyncDatabase

pytestmark = pytest.mark.backend

sqlalchemy_seqkeys.alembic.register()  # where Alembic has not loaded the plugin (not installed)

ROWS = 30

#: what each engine stores a TypeID in: 16 bytes everywhere
STORED_TYPE = {
    "sqlite": "BLOB",
    "postgresql": "UUID",
    "mysql": "BINARY(16)",
    "mariadb": "BINARY(16)",
    "spanner": "BYTES(16)",
}


def make_models(native_uuid: bool = False) -> tuple[type[Any], type[Any], sa.MetaData]:
    class Base(DeclarativeBase):
        pass

    class User(Base):
        __tablename__ = "tid_users"
        id: Mapped[TypeID] = mapped_column(
            TypeIDType("user", native_uuid=native_uuid),
            primary_key=True,
            default=typeid_default("user"),
        )
        name: Mapped[str] = mapped_column(sa.String(40))

    class Order(Base):
        __tablename__ = "tid_orders"
        id: Mapped[TypeID] = mapped_column(
            TypeIDType("order"), primary_key=True, default=typeid_default("order")
        )
        user_id: Mapped[TypeID] = mapped_column(
            TypeIDType("user", native_uuid=native_uuid), sa.ForeignKey(User.id)
        )
        note: Mapped[TypeID | None] = mapped_column(TypeIDType("pre_fix"), nullable=True)

    return User, Order, Base.metadata


@pytest.mark.parametrize("native_uuid", [False, True])
def test_typeid_keys_through_the_orm_and_core(engine: Engine, native_uuid: bool) -> None:
    # native_uuid=True is MariaDB's UUID type there, and changes nothing elsewhere (it
    # stored 36-character text there: a table made without it found nothing with it)
    User, Order, metadata = make_models(native_uuid)  # noqa: N806 (classes)
    metadata.drop_all(engine)
    metadata.create_all(engine)
    try:
        with Session(engine, expire_on_commit=False) as session:
            users = [User(name=f"u{i}") for i in range(ROWS)]
            session.add_all(users)
            session.commit()
        with Session(engine, expire_on_commit=False) as session:
            orders = [Order(user_id=u.id, note=new_typeid("pre_fix")) for u in users]
            session.add_all(orders)
            session.commit()
        assert all(isinstance(u.id, TypeID) and u.id.prefix == "user" for u in users)
        assert {u.id.uuid.version for u in users} == {7}
        assert len({u.id for u in users}) == ROWS

        with Session(engine) as session:
            # the text an API receives finds the row; the object read back is equal
            found = session.get(User, str(users[3].id))
            assert found is not None
            assert found.id == users[3].id
            assert found.name == "u3"
            assert session.get(User, users[4].id).name == "u4"  # type: ignore[union-attr]
            joined = session.execute(
                sa.select(Order.id, User.id, Order.note)
                .join(User, Order.user_id == User.id)
                .where(User.id == users[5].id)
            ).one()
            assert joined == (orders[5].id, users[5].id, orders[5].note)
            assert joined[2].prefix == "pre_fix"

        with engine.connect() as conn:
            table = metadata.tables["tid_users"]
            # Core: inserted_primary_key and rows are TypeIDs
            result = conn.execute(table.insert(), {"name": "core"})
            assert result.inserted_primary_key is not None
            key = result.inserted_primary_key[0]
            assert isinstance(key, TypeID)
            assert key.prefix == "user"
            rows = conn.execute(sa.select(table.c.id).where(table.c.id == key)).scalars().all()
            assert rows == [key]
            # the key is stored in 16 bytes, not as text
            column = next(c for c in sa.inspect(conn).get_columns("tid_users") if c["name"] == "id")
            stored = str(column["type"].compile(dialect=conn.dialect)).upper()
            expected = STORED_TYPE[engine.dialect.name.split("+")[0]]
            if native_uuid and mariadb_uuid_keeps_v7_order(conn.dialect):
                expected = "UUID"
            assert stored == expected, stored
            # the other setting of native_uuid reads the same storage where it changes nothing
            other = sa.select(table.c.name).where(
                table.c.id == sa.bindparam("k", key, type_=TypeIDType("user", native_uuid=True))
            )
            if not mariadb_uuid_keeps_v7_order(conn.dialect):
                assert conn.scalar(other) == "core"
            # another type's id is refused on the way in, as a SeqKeysError
            with pytest.raises(sa.exc.StatementError) as raised:
                conn.execute(sa.select(table).where(table.c.id == str(new_typeid("order"))))
            assert isinstance(raised.value.orig, InvalidTypeIDError)
            with pytest.raises(sa.exc.StatementError) as raised:
                conn.execute(table.insert(), {"id": new_typeid("order"), "name": "x"})
            assert isinstance(raised.value.orig, InvalidTypeIDError)
            conn.rollback()
    finally:
        metadata.drop_all(engine)


def test_typeid_keys_sort_by_creation_in_the_database(engine: Engine) -> None:
    User, _, metadata = make_models()  # noqa: N806 (classes)
    metadata.drop_all(engine)
    metadata.create_all(engine)
    try:
        with Session(engine) as session:
            for i in range(ROWS):
                session.add(User(name=f"u{i}"))
                session.flush()
            session.commit()
        with Session(engine) as session:
            names = session.scalars(sa.select(User.name).order_by(User.id)).all()
            ids = session.scalars(sa.select(User.id).order_by(User.id)).all()
        assert names == [f"u{i}" for i in range(ROWS)]
        assert [str(i) for i in ids] == sorted(str(i) for i in ids)
    finally:
        metadata.drop_all(engine)


#: aiomysql 0.3.2 cannot bind any bytes value with PyMySQL 1.2.3 and later: it calls
#: pymysql.converters.escape_bytes_prefixed, which PyMySQL replaced by a string
#: (https://github.com/aio-libs/aiomysql/issues/1080, open). MariaDB's own UUID type
#: (native_uuid=True) is exchanged as text and works through it.
AIOMYSQL_BYTES_BUG = pytest.mark.xfail(
    raises=TypeError, strict=True, reason="aio-libs/aiomysql#1080: no bytes parameters"
)


def _aiomysql_cannot_bind_bytes() -> bool:
    # the bug's trigger: PyMySQL 1.2.3+ holds a str where aiomysql calls a function
    import pymysql.converters

    return not callable(getattr(pymysql.converters, "escape_bytes_prefixed", None))


def test_typeid_keys_under_asyncsession(
    async_database: AsyncDatabase, request: pytest.FixtureRequest
) -> None:
    if async_database.label == "mysql+aiomysql" and _aiomysql_cannot_bind_bytes():
        request.applymarker(AIOMYSQL_BYTES_BUG)
    User, Order, metadata = make_models()  # noqa: N806 (classes)

    async def main() -> tuple[list[Any], list[Any]]:
        engine = async_database.engine()
        try:
            async with engine.begin() as conn:
                await conn.run_sync(metadata.drop_all)
                await conn.run_sync(metadata.create_all)
            async with AsyncSession(engine, expire_on_commit=False) as session:
                users = [User(name=f"u{i}") for i in range(ROWS)]
                session.add_all(users)
                await session.commit()
                session.add_all(Order(user_id=u.id) for u in users)
                await session.commit()
            async with AsyncSession(engine) as session:
                found = await session.get(User, str(users[7].id))
                assert found is not None
                assert found.name == "u7"
                read = list(await session.scalars(sa.select(Order.user_id)))
            async with engine.begin() as conn:
                await conn.run_sync(metadata.drop_all)
            return users, read
        finally:
            await engine.dispose()

    users, read = asyncio.run(main())
    assert sorted(read) == sorted(u.id for u in users)
    assert all(isinstance(t, TypeID) and t.prefix == "user" for t in read)


def _engine(url: str) -> Engine:
    engine = sa.create_engine(url)
    if engine.dialect.name.startswith("spanner"):
        from tests._emulator import configure_engine

        configure_engine(engine)
    return engine


@pytest.mark.parametrize("name", ENGINE_NAMES)
def test_autogenerate_renders_the_type_and_then_finds_nothing(name: str, engines: Any) -> None:
    _, _, metadata = make_models()
    opts = {
        "target_metadata": metadata,
        "render_item": sqlalchemy_seqkeys.alembic.render_item,
        "autogenerate_plugins": ["alembic.autogenerate.*", "seqkeys"],
    }
    with engines.fresh_database(name, "typeid") as url:
        engine = _engine(url)
        try:
            with engine.begin() as conn:
                sqlite = conn.dialect.name == "sqlite"
                context = MigrationContext.configure(conn, opts={**opts, "render_as_batch": sqlite})
                script = produce_migrations(context, metadata)
                code = render_python_code(
                    script.upgrade_ops,  # type: ignore[arg-type]
                    render_item=sqlalchemy_seqkeys.alembic.render_item,  # type: ignore[arg-type]
                    render_as_batch=sqlite,
                    migration_context=context,
                )
                assert "sqlalchemy_seqkeys.typeid_sql.TypeIDType(prefix='user')" in code, code
                assert "sqlalchemy_seqkeys.typeid_sql.TypeIDType(prefix='pre_fix')" in code, code
                namespace: dict[str, Any] = {
                    "op": Operations(context),
                    "sa": sa,
                    "sqlalchemy_seqkeys": sqlalchemy_seqkeys,
                }
                exec(f"def upgrade():\n{textwrap.indent(code, '    ')}\n", namespace)
                namespace["upgrade"]()
            with engine.connect() as conn:
                context = MigrationContext.configure(conn, opts=opts)
                second = produce_migrations(context, metadata).upgrade_ops
                assert second is not None
                assert second.as_diffs() == [], code
            User, _, _ = make_models()  # noqa: N806 (classes)
            with Session(engine, expire_on_commit=False) as session:
                user = User(name="migrated")
                session.add(user)
                session.commit()
            with Session(engine) as session:
                assert session.get(User, user.id).name == "migrated"  # type: ignore[union-attr]
        finally:
            engine.dispose()


@pytest.mark.parametrize("driver", ["mysql+asyncmy", "mysql+aiomysql"])
def test_mariadb_native_uuid_storage_sync_and_async(
    mysql_engine: Engine, engines: Any, driver: str
) -> None:
    from tests.conftest import _async_database

    User, _, metadata = make_models(native_uuid=True)  # noqa: N806 (classes)
    metadata.drop_all(mysql_engine)
    metadata.create_all(mysql_engine)
    try:
        with mysql_engine.connect() as conn:
            column = next(c for c in sa.inspect(conn).get_columns("tid_users") if c["name"] == "id")
            assert str(column["type"].compile(dialect=conn.dialect)).upper() == "UUID"
        with Session(mysql_engine, expire_on_commit=False) as session:
            sync_users = [User(name=f"s{i}") for i in range(ROWS)]
            session.add_all(sync_users)
            session.commit()

        database = _async_database(driver, engines)

        async def main() -> list[Any]:
            engine = database.engine()
            try:
                async with AsyncSession(engine, expire_on_commit=False) as session:
                    users = [User(name=f"a{i}") for i in range(ROWS)]
                    session.add_all(users)
                    await session.commit()
                async with AsyncSession(engine) as session:
                    found = await session.get(User, str(users[2].id))
                    assert found is not None
                    assert found.name == "a2"
                    return list(await session.scalars(sa.select(User.id).order_by(User.id)))
            finally:
                await engine.dispose()

        ids = asyncio.run(main())
        assert len(ids) == 2 * ROWS
        assert all(isinstance(t, TypeID) and t.prefix == "user" for t in ids)
        assert ids[:ROWS] == [u.id for u in sync_users]  # MariaDB's UUID keeps v7 order
    finally:
        metadata.drop_all(mysql_engine)
