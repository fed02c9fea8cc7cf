"""``TypeIDType(native_uuid=True)`` on a ``mysql://`` dialect that never connected is refused.

Such a dialect cannot tell MariaDB from MySQL. Before, it compiled the column
as ``BINARY(16)`` and bound 16 bytes (offline DDL, ``alembic --sql``,
``CreateTable(...).compile(engine)`` before the first connection), while the
same URL connected to MariaDB 10.11.6+ makes a ``UUID`` column and binds its
36-character text. A table created from the offline DDL then received text in
its ``BINARY(16)`` column: a raw ``DataError`` in strict mode, and with
``sql_mode=''`` the text cut to 16 bytes (ids read back wrong, duplicate keys).
Now the unconnected ``mysql`` dialect raises ``InvalidTypeIDError`` naming a
``mariadb://`` URL for offline SQL; ``mariadb://`` compiles ``UUID``, a
connected dialect what its server has, and ``native_uuid=False`` is unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Engine
from sqlalchemy.schema import CreateTable

from sqlalchemy_seqkeys import InvalidTypeIDError, TypeIDType, new_typeid

pytestmark = pytest.mark.backend

NAME = "seqkeys_ids_review_typeid_offline"


def _table(native_uuid: bool = True) -> sa.Table:
    return sa.Table(
        NAME,
        sa.MetaData(),
        sa.Column("id", TypeIDType("user", native_uuid=native_uuid), primary_key=True),
    )


def _refused(run: object) -> str:
    with pytest.raises(InvalidTypeIDError) as raised:
        run()  # type: ignore[operator]
    message = str(raised.value)
    assert "TypeIDType(prefix='user', native_uuid=True)" in message
    assert "mariadb://" in message
    return message


@pytest.mark.parametrize("url", ["mysql://", "mysql+pymysql://", "mysql+asyncmy://"])
def test_an_unconnected_mysql_dialect_refuses_native_uuid(url: str) -> None:
    dialect = sa.engine.make_url(url).get_dialect()()
    table = _table()
    _refused(lambda: CreateTable(table).compile(dialect=dialect))
    column_type = table.c.id.type
    _refused(lambda: column_type.dialect_impl(dialect).bind_processor(dialect))
    _refused(lambda: column_type.process_bind_param(new_typeid("user"), dialect))
    statement = sa.insert(table).values(id=new_typeid("user"))
    _refused(lambda: statement.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))


def test_what_an_unconnected_dialect_can_tell_is_unchanged() -> None:
    mariadb = sa.engine.make_url("mariadb+pymysql://").get_dialect()()
    assert "id UUID NOT NULL" in str(CreateTable(_table()).compile(dialect=mariadb))
    for dialect in (mysql.dialect(), mariadb):
        ddl = str(CreateTable(_table(native_uuid=False)).compile(dialect=dialect))
        assert "id BINARY(16) NOT NULL" in ddl


def test_an_engine_not_yet_connected_refuses_then_works_once_connected(
    mysql_engine: Engine,
) -> None:
    """The mixed case: the same ``mysql://`` URL, before and after its first connection."""
    if not mysql_engine.dialect.is_mariadb:  # type: ignore[attr-defined]
        pytest.skip("MySQL: native_uuid=True is BINARY(16) connected or not")
    url = mysql_engine.url.render_as_string(hide_password=False)
    assert url.startswith("mysql")
    engine = sa.create_engine(url)
    table = _table()
    try:
        message = _refused(lambda: CreateTable(table).compile(engine))
        assert "native_uuid=False" in message
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {NAME}"))
        # connected: the column is what the server keeps (UUID on 10.11.6+), and the
        # refusal before the connection left nothing cached on the dialect
        ddl = str(CreateTable(table).compile(engine))
        table.create(engine)
        ids = [new_typeid("user") for _ in range(3)]
        with engine.begin() as conn:
            conn.execute(table.insert(), [{"id": i} for i in ids])
            got = conn.execute(sa.select(table.c.id)).scalars().all()
        assert sorted(map(str, got)) == sorted(map(str, ids))
        assert "id UUID NOT NULL" in ddl or "id BINARY(16) NOT NULL" in ddl
    finally:
        table.drop(engine, checkfirst=True)
        engine.dispose()


@pytest.fixture
def unconnected_mysql(mysql_engine: Engine) -> Iterator[Engine]:
    engine = sa.create_engine(mysql_engine.url.render_as_string(hide_password=False))
    yield engine
    engine.dispose()


def test_native_uuid_false_compiles_offline_as_before(unconnected_mysql: Engine) -> None:
    ddl = str(CreateTable(_table(native_uuid=False)).compile(unconnected_mysql))
    assert "id BINARY(16) NOT NULL" in ddl
