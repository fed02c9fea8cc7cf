"""A lease table's name the database cannot hold is refused at start(), naming the limit;
a database error that is not a connection problem says what the server said.

Before: WorkerLease checked only the name's length in characters (128). On PostgreSQL a
68-byte name worked on its first start, creating a table under the name cut to 63 bytes;
every later start failed on "relation ... already exists", with the advice to check that
the server is up and accepts connections, and a second long name with the same 63-byte
start used that same table. 'x' * 64 on PostgreSQL, 'x' * 65 and an emoji on MariaDB failed
at the first start, with the same advice.
"""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    InvalidLeaseError,
    WorkerLease,
    WorkerLeaseDatabaseError,
)
from sqlalchemy_seqkeys.workers import AsyncWorkerLease
from tests.conftest import _async_database, _Engines

pytestmark = pytest.mark.backend

#: 37 characters, 68 bytes of UTF-8: their first 63 bytes are the same
PG_LONG = ("é" * 31 + "_first", "é" * 31 + "_second")


def _tables(engine: Engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names())


def _refused(engine: Engine, name: str, limit: str) -> None:
    before = _tables(engine)
    for _ in range(2):  # the first start and every later one: the same error
        lease = WorkerLease(engine, table=name, ttl=2)
        with pytest.raises(InvalidLeaseError) as caught:
            lease.start()
        message = str(caught.value)
        assert "lease table name" in message, message
        assert limit in message, message
        assert "server is up" not in message, message
        assert lease.closed
    assert _tables(engine) == before, "nothing is created under a name the server cannot hold"


@pytest.mark.parametrize("name", [*PG_LONG, "x" * 64])
def test_postgresql_refuses_a_name_past_63_bytes_at_start(engines: _Engines, name: str) -> None:
    _refused(engines.get("postgresql"), name, "63 bytes")


def test_two_long_names_that_postgresql_would_cut_to_one_are_both_refused(
    engines: _Engines,
) -> None:
    # Cut to 63 bytes, they would be one table: both are refused, so no two leases meant
    # to be apart ever share one (nor fail on "already exists").
    engine = engines.get("postgresql")
    for name in PG_LONG:
        _refused(engine, name, "63 bytes")


@pytest.mark.parametrize(
    ("backend", "name"), [("postgresql", "x" * 63), ("mysql", "x" * 64), ("mysql", "é" * 64)]
)
def test_a_name_at_the_limit_starts_again_and_again(
    engines: _Engines, backend: str, name: str
) -> None:
    engine = engines.get(backend)
    try:
        for _ in range(3):
            with WorkerLease(engine, table=name, ttl=2) as lease:
                assert lease.check() == 0
    finally:
        sa.Table(name, sa.MetaData()).drop(engine, checkfirst=True)


@pytest.mark.parametrize(
    ("name", "limit"), [("x" * 65, "64 characters"), ("t\U0001f600emoji", "U+FFFF")]
)
def test_mariadb_refuses_a_name_it_cannot_hold_at_start(
    engines: _Engines, name: str, limit: str
) -> None:
    _refused(engines.get("mysql"), name, limit)


def test_an_async_lease_refuses_the_name_before_it_connects(engines: _Engines) -> None:
    database = _async_database("postgresql+asyncpg", engines)

    async def main() -> None:
        engine = database.engine()
        try:
            lease = AsyncWorkerLease(engine, table="x" * 64, ttl=2)
            with pytest.raises(InvalidLeaseError, match="63 bytes"):
                await lease.start()
            assert lease.closed
        finally:
            await engine.dispose()

    asyncio.run(main())


@pytest.mark.parametrize("backend", ["postgresql", "mysql"])
def test_a_statement_the_server_refuses_is_not_called_a_connection_problem(
    engines: _Engines, backend: str
) -> None:
    # create_table=False and no such table: the server's own words, not "is the server up"
    engine = engines.get(backend)
    lease = WorkerLease(engine, table="seqkeys_no_such_lease_table", create_table=False, ttl=2)
    with pytest.raises(WorkerLeaseDatabaseError) as caught:
        lease.start()
    message = str(caught.value)
    assert "seqkeys_no_such_lease_table" in message
    assert "exist" in message, message  # "does not exist" / "doesn't exist"
    assert "server is up" not in message, message
    assert "max_connections" not in message, message


def test_a_refused_connection_keeps_the_connection_advice(engines: _Engines) -> None:
    url = engines.get("postgresql").url.set(host="127.0.0.1", port=1)
    engine = sa.create_engine(url)
    try:
        with pytest.raises(WorkerLeaseDatabaseError, match="server is up"):
            WorkerLease(engine, ttl=2).start()
    finally:
        engine.dispose()
