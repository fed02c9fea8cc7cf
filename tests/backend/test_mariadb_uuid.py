"""MariaDB's own ``UUID`` type as the storage of UUIDv7 keys: ``CombGuid(native_uuid=True)``.

MariaDB 10.11.5+ swaps the groups of a UUID only when its version nibble is 1
to 5 (byte 6 from 0x01 to 0x5F) and its variant's top bit is set (byte 8 >= 0x80),
and from 10.11.6 (10.10.7, 11.0.4, 11.1.3, 11.2.2; MDEV-31926) compares the others
by their bytes, so version-7 keys sort in minting order in 16 bytes. COMB values carry random
bits where the version and variant go, so that type swaps some of them (about
one in five) and their order is lost: shown here on the live server.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Engine
from sqlalchemy.schema import CreateTable

from sqlalchemy_seqkeys import (
    CombGuid,
    InvalidGuidError,
    comb_timestamp,
    new_comb,
    new_comb_guid,
    new_uuid7,
    uuid7_bounds,
    uuid7_timestamp,
)

ROWS = 2000


def _mariadb_dialect() -> sa.Dialect:
    return sa.engine.make_url("mariadb+pymysql://").get_dialect()()


def _table(metadata: sa.MetaData, name: str, type_: sa.types.TypeEngine[uuid.UUID]) -> sa.Table:
    return sa.Table(
        name,
        metadata,
        sa.Column("id", type_, primary_key=True),
        sa.Column("n", sa.Integer, nullable=False),
    )


@pytest.fixture
def mariadb_md(mysql_engine: Engine) -> Iterator[sa.MetaData]:
    if not mysql_engine.dialect.is_mariadb:  # type: ignore[attr-defined]
        pytest.skip("MySQL has no UUID type")
    md = sa.MetaData()
    yield md
    md.drop_all(mysql_engine)


def _shuffled_insert(engine: Engine, table: sa.Table, keys: list[uuid.UUID]) -> list[int]:
    """Insert keys (minting order n) in random order; return n in the server's ORDER BY id."""
    rows = [{"id": key, "n": n} for n, key in enumerate(keys)]
    random.Random(7).shuffle(rows)
    with engine.begin() as conn:
        conn.execute(table.insert(), rows)
        return list(conn.scalars(sa.select(table.c.n).order_by(table.c.id)))


def test_v7_keys_keep_minting_order_in_mariadb_uuid(
    mysql_engine: Engine, mariadb_md: sa.MetaData
) -> None:
    events = _table(mariadb_md, "v7_native", CombGuid(native_uuid=True))
    mariadb_md.create_all(mysql_engine)
    column = sa.inspect(mysql_engine).get_columns("v7_native")[0]
    assert str(column["type"]).upper() == "UUID"  # MariaDB's own 16-byte type

    keys = [new_uuid7() for _ in range(ROWS)]
    assert _shuffled_insert(mysql_engine, events, keys) == list(range(ROWS))
    with mysql_engine.connect() as conn:
        back = conn.scalars(sa.select(events.c.id).order_by(events.c.id)).all()
    assert back == keys
    assert all(isinstance(k, uuid.UUID) for k in back)

    # time windows are key ranges on this storage too
    start = uuid7_timestamp(keys[500])
    end = uuid7_timestamp(keys[1500]) + timedelta(milliseconds=1)
    lo, hi = uuid7_bounds(start, end)
    with mysql_engine.connect() as conn:
        window = conn.scalars(
            sa.select(events.c.id).where(events.c.id >= lo, events.c.id < hi).order_by(events.c.id)
        ).all()
    assert window == [k for k in keys if start <= uuid7_timestamp(k) < end]


def _mariadb_swaps(key: uuid.UUID) -> bool:
    """MariaDB's rule (10.11.5+) for which UUIDs its type stores with swapped groups."""
    b = key.bytes
    return 0x01 <= b[6] <= 0x5F and b[8] >= 0x80


def test_comb_keys_lose_their_order_in_mariadb_uuid(
    mysql_engine: Engine, mariadb_md: sa.MetaData
) -> None:
    # Why new_comb_guid is refused on CombGuid(native_uuid=True): the raw UUID type
    # swaps the groups of the COMB values whose random bits look like a version
    # 1-5 UUID. The keys of one millisecond share those bits, so they are minted
    # here over many milliseconds (a quick run can fall within one or two, all
    # of them on keys MariaDB leaves alone).
    raw = sa.Table("comb_in_uuid", mariadb_md, sa.Column("id"), sa.Column("n"))
    with mysql_engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE comb_in_uuid (id UUID PRIMARY KEY, n INT NOT NULL)"))
    keys: list[uuid.UUID] = []
    # batches of 40 in milliseconds of their own, each swapped with p = 0.37,
    # until at least 8 of each kind (50 batches nearly always; at most 500)
    for _ in range(500):
        keys += [new_comb("as_string") for _ in range(40)]
        time.sleep(0.002)
        swapped = sum(map(_mariadb_swaps, keys))
        if len(keys) >= ROWS and min(swapped, len(keys) - swapped) >= 8 * 40:
            break
    assert len({comb_timestamp(k, "as_string") for k in keys}) >= 40
    assert min(swapped, len(keys) - swapped) >= 8 * 40
    insert = sa.text("INSERT INTO comb_in_uuid (id, n) VALUES (:id, :n)")
    rows = [{"id": str(key), "n": n} for n, key in enumerate(keys)]
    random.Random(7).shuffle(rows)
    with mysql_engine.begin() as conn:
        conn.execute(insert, rows)
        order = list(conn.scalars(sa.select(raw.c.n).order_by(raw.c.id)))
    assert sorted(order) == list(range(len(keys)))
    assert order != list(range(len(keys)))
    # the keys MariaDB leaves alone keep their order among themselves
    kept = {n for n, key in enumerate(keys) if not _mariadb_swaps(key)}
    assert [n for n in order if n in kept] == sorted(kept)

    # and a COMB value with a fully random tail (new_comb(at=...)) can be refused
    # outright: this one's bits read as a version 9 UUID with a non-RFC variant
    refused = {"id": "018bcfe5-6a32-9b36-390e-3793a4068fac", "n": -1}
    with pytest.raises(sa.exc.DBAPIError, match="Incorrect uuid value"), mysql_engine.begin() as c:
        c.execute(insert, refused)


def test_comb_default_on_native_uuid_column_is_refused() -> None:
    with pytest.raises(InvalidGuidError, match="new_uuid7"):
        sa.Table(
            "t",
            sa.MetaData(),
            sa.Column("id", CombGuid(native_uuid=True), primary_key=True, default=new_comb_guid),
        )


@pytest.mark.parametrize(
    ("dialect", "expected"),
    [
        (_mariadb_dialect(), "UUID"),  # offline: no version known yet
        (mysql.dialect(), "CHAR(36)"),  # MySQL has no UUID type
    ],
)
def test_native_uuid_ddl(dialect: sa.Dialect, expected: str) -> None:
    table = sa.Table(
        "t", sa.MetaData(), sa.Column("id", CombGuid(native_uuid=True), primary_key=True)
    )
    assert f"id {expected}" in str(CreateTable(table).compile(dialect=dialect))


@pytest.mark.parametrize(
    ("version", "native"),
    [
        ((10, 11, 4), False),
        # 10.11.5 and 11.0.3 store version 7 unswapped (MDEV-29959) but compare
        # it wrongly (MDEV-31926): the fixed releases of each series
        ((10, 11, 5), False),
        ((10, 11, 6), True),
        ((11, 0, 2), False),
        ((11, 0, 3), False),
        ((11, 0, 4), True),
        ((11, 1, 2), False),
        ((11, 1, 3), True),
        ((11, 2, 1), False),
        ((11, 2, 2), True),
        ((11, 3, 0), True),
        ((11, 4, 2), True),
        ((10, 10, 6), False),
        ((10, 10, 7), True),
    ],
)
def test_native_uuid_only_where_the_server_keeps_v7_order(
    version: tuple[int, ...], native: bool
) -> None:
    dialect = _mariadb_dialect()
    dialect.server_version_info = version
    table = sa.Table(
        "t", sa.MetaData(), sa.Column("id", CombGuid(native_uuid=True), primary_key=True)
    )
    ddl = str(CreateTable(table).compile(dialect=dialect))
    assert ("id UUID" in ddl) is native, ddl


def test_binary_and_native_uuid_together_are_refused() -> None:
    with pytest.raises(InvalidGuidError, match="not both"):
        CombGuid(binary=True, native_uuid=True)


@pytest.mark.parametrize("kind", ["CombGuid", "TypeIDType"])
def test_native_uuid_literals_are_quoted(
    mysql_engine: Engine, mariadb_md: sa.MetaData, kind: str
) -> None:
    # literal_binds (Alembic --sql, offline SQL): a UUID in MariaDB's UUID type is
    # text, quoted; it was written bare (an all-digit one read as arithmetic)
    from sqlalchemy_seqkeys import TypeIDType, new_typeid

    type_: sa.types.TypeEngine[Any] = (
        CombGuid(native_uuid=True) if kind == "CombGuid" else TypeIDType("user", native_uuid=True)
    )
    table = _table(mariadb_md, f"seqkeys_literal_{kind.lower()}", type_)
    mariadb_md.create_all(mysql_engine)
    keys: list[Any] = (
        [uuid.UUID("01890000-0000-7000-8000-000000000000"), new_uuid7()]
        if kind == "CombGuid"
        else [new_typeid("user"), new_typeid("user")]
    )
    with mysql_engine.begin() as conn:
        for n, key in enumerate(keys):
            insert = table.insert().values(id=key, n=n)
            sql = str(insert.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
            assert "'" in sql, sql
            conn.exec_driver_sql(sql.replace("%", "%%"))
        select = sa.select(table.c.n).where(table.c.id == keys[0])
        sql = str(select.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
        assert conn.exec_driver_sql(sql.replace("%", "%%")).scalar() == 0
        assert sorted(conn.scalars(sa.select(table.c.id))) == sorted(keys)


def test_native_uuid_is_part_of_the_statement_cache_key(
    mysql_engine: Engine, mariadb_md: sa.MetaData
) -> None:
    # Two statements alike but for native_uuid: SQLAlchemy's statement cache keys a
    # type by its __init__ arguments, and a keyword-only one was left out: the second
    # statement ran with the first one's bind processor (16 bytes, not the UUID's text)
    from sqlalchemy_seqkeys import TypeIDType, new_typeid

    key = new_typeid("user")
    sent = {}
    with mysql_engine.connect() as conn:
        for native in (False, True):
            bound = sa.bindparam("k", key, type_=TypeIDType("user", native_uuid=native))
            sent[native] = conn.execute(sa.select(sa.func.length(bound))).scalar()
    assert sent == {False: 16, True: 36}
