"""Databases of this test run on the shared servers: random names, always dropped.

Each run creates its databases as ``seqkeys_t<pid>_<random>`` and drops them
when it ends, even after a failure. A run that was killed cannot drop its own,
so every run first drops those whose process no longer exists. Nothing else
on the server is touched: no fixed database name is dropped, and no global
setting is changed.
"""

from __future__ import annotations

import os
import re
import secrets

import sqlalchemy as sa
from sqlalchemy.engine import URL, make_url

from ._procs import alive

PREFIX = "seqkeys_t"
_OURS = re.compile(rf"^{PREFIX}(\d+)_[a-z0-9_]+$")


def new_name(label: str = "") -> str:
    """A database name unique to this process and call: ``seqkeys_t<pid>_<hex>``."""
    return f"{PREFIX}{os.getpid()}_{label}{secrets.token_hex(2)}"  # <= 30 chars (Spanner)


def _admin(url: URL) -> sa.Engine:
    return sa.create_engine(url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)


def _names(conn: sa.Connection) -> list[str]:
    if conn.dialect.name == "postgresql":
        return list(conn.scalars(sa.text("SELECT datname FROM pg_database")))
    return list(conn.scalars(sa.text("SHOW DATABASES")))


def _drop(conn: sa.Connection, name: str) -> None:
    assert name.startswith(PREFIX), name  # only ever a database of a test run
    force = " WITH (FORCE)" if conn.dialect.name == "postgresql" else ""
    quoted = conn.dialect.identifier_preparer.quote_identifier(name)
    conn.execute(sa.text(f"DROP DATABASE IF EXISTS {quoted}{force}"))


def drop_leftovers(server_url: str | URL) -> list[str]:
    """Drop the databases of earlier runs whose process is gone; return their names."""
    dropped = []
    with _admin(make_url(server_url)).connect() as conn:
        for name in _names(conn):
            match = _OURS.match(name)
            if match and not alive(int(match.group(1))):
                _drop(conn, name)
                dropped.append(name)
    return dropped


def create(server_url: str | URL, name: str) -> URL:
    """Create database ``name`` on the server of ``server_url``; return its URL."""
    url = make_url(server_url)
    assert _OURS.match(name), name
    with _admin(url).connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {conn.dialect.identifier_preparer.quote(name)}"))
    return url.set(database=name)


def drop(server_url: str | URL, name: str) -> None:
    """Drop database ``name`` (one of this run's) from the server of ``server_url``."""
    with _admin(make_url(server_url)).connect() as conn:
        _drop(conn, name)
