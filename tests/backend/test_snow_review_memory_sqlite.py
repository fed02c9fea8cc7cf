"""A sync WorkerLease renews its row from a thread of its own: on an in-memory SQLite
database that thread must reach the same database, or the lease is refused at start(),
before anything is claimed (it would otherwise expire one ttl later, its renewals failing
on "no such table" in an empty database of the thread's own)."""

from __future__ import annotations

import time
import uuid
import warnings
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import InvalidLeaseError, Snowflake, WorkerLease

TTL = 0.5


def _refused(engine: sa.Engine, *words: str) -> None:
    lease = WorkerLease(engine, ttl=TTL)
    with pytest.raises(InvalidLeaseError) as raised:
        lease.start()
    message = str(raised.value)
    for word in words:
        assert word in message, message
    assert lease.closed
    with pytest.raises(InvalidLeaseError, match="closed"):
        lease.start()
    # refused before anything was claimed: not even the table was created
    assert not sa.inspect(engine).has_table("seqkeys_workers")


def _renewed(engine: sa.Engine) -> None:
    """The lease outlives several ttls: its thread renews it (no warning on close)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with WorkerLease(engine, ttl=TTL) as lease:
            ids = Snowflake(worker_id=lease)
            first = ids()
            time.sleep(3 * TTL)
            assert lease.valid
            assert ids() > first
        with engine.connect() as conn:  # released: the row expired
            expires = conn.execute(sa.text("SELECT expires_at FROM seqkeys_workers")).scalar_one()
        assert expires == 0


def test_default_in_memory_engine_is_refused_at_start() -> None:
    # SQLAlchemy's SingletonThreadPool: a connection, and so a database, per thread
    _refused(sa.create_engine("sqlite://"), "in-memory", "thread", "StaticPool", "file")


def test_in_memory_engine_on_a_pool_of_many_connections_is_refused() -> None:
    engine = sa.create_engine("sqlite:///:memory:", poolclass=sa.pool.QueuePool)
    _refused(engine, "in-memory", "StaticPool")


def test_static_pool_refusing_other_threads_is_refused() -> None:
    # one connection, but sqlite3's check_same_thread keeps the renewal thread out
    engine = sa.create_engine("sqlite://", poolclass=sa.pool.StaticPool)
    _refused(engine, "check_same_thread")


def test_static_pool_shared_with_every_thread_is_renewed() -> None:
    engine = sa.create_engine(
        "sqlite://", poolclass=sa.pool.StaticPool, connect_args={"check_same_thread": False}
    )
    _renewed(engine)


def test_shared_cache_memory_database_is_renewed() -> None:
    # every connection of the process opens the one named in-memory database
    url = f"sqlite:///file:snowfix{uuid.uuid4().hex}?mode=memory&cache=shared&uri=true"
    engine = sa.create_engine(url, poolclass=sa.pool.SingletonThreadPool)
    with engine.connect():  # kept open: the database lives while a connection does
        _renewed(engine)


@pytest.mark.parametrize("pool", [sa.pool.SingletonThreadPool, sa.pool.QueuePool])
def test_file_database_is_renewed_whatever_the_pool(tmp_path: Path, pool: Any) -> None:
    _renewed(sa.create_engine(f"sqlite:///{tmp_path / 'leases.db'}", poolclass=pool))
