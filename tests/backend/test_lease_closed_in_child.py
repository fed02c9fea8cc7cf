"""A closed lease stays closed: in a child forked after its close (its generators raise
instead of claiming a new worker id), in a child that closes it (the child's own lease is
released, the parent's row kept), and for ``with lease:`` after the close."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import InvalidLeaseError, Snowflake, WorkerLease, workers_table
from tests._helpers import fresh_table, in_forked_child


@pytest.fixture
def server_engine(engines: Any) -> Iterator[Engine]:
    with fresh_table(engines.get("postgresql"), workers_table) as fresh:
        engine = sa.create_engine(fresh.url)
        yield engine
        engine.dispose()


def _rows(engine: Engine) -> dict[int, Any]:
    t = workers_table(sa.MetaData())
    with engine.connect() as conn:
        return {r.worker_id: r for r in conn.execute(sa.select(t))}


def test_a_child_forked_after_the_close_raises_instead_of_claiming(server_engine: Engine) -> None:
    with WorkerLease(server_engine, ttl=5, max_worker_id=3) as lease:
        ids = Snowflake(worker_id=lease)
        ids()

    def child() -> str:
        try:
            value = ids()
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        return f"minted {value} with worker id {ids.decode(value).worker_id}"

    said = in_forked_child(child)
    assert said.startswith("WorkerLeaseLostError"), said
    assert "closed" in said
    rows = _rows(server_engine)
    assert list(rows) == [lease.worker_id]  # the child claimed nothing
    assert rows[lease.worker_id].expires_at == 0


def test_close_in_a_child_closes_the_childs_lease_and_leaves_the_parents(
    server_engine: Engine,
) -> None:
    lease = WorkerLease(server_engine, ttl=5, max_worker_id=3).start()
    ids = Snowflake(worker_id=lease)
    ids()

    def child() -> str:
        child_worker = ids.decode(ids()).worker_id
        lease.close()
        try:
            ids()
        except Exception as exc:
            return f"{child_worker} {type(exc).__name__}"
        return f"{child_worker} minted after close"

    worker, outcome = in_forked_child(child).split(" ", 1)
    assert outcome == "WorkerLeaseLostError"
    rows = _rows(server_engine)
    assert rows[int(worker)].expires_at == 0  # the child's lease was released
    now_ms = int(time.time() * 1000)
    assert rows[lease.worker_id].expires_at > now_ms  # the parent's is still held
    assert lease.valid
    ids()
    lease.close()


def test_with_on_a_closed_lease_raises(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'leases.db'}")
    lease = WorkerLease(engine, ttl=2)
    with lease:
        pass
    with pytest.raises(InvalidLeaseError, match="closed"), lease:
        pass
    unstarted = WorkerLease(engine, ttl=2)
    unstarted.close()
    with pytest.raises(InvalidLeaseError, match="closed"), unstarted:
        pass
    engine.dispose()
