"""Worker-id leases in the database: exclusive, renewed, reclaimed, and fatal when lost."""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    NoWorkerIdError,
    Snowflake,
    WorkerLease,
    WorkerLeaseLostError,
    workers_table,
)
from tests._helpers import fresh_table, in_forked_child

from . import _seq_workers

pytestmark = pytest.mark.backend


@pytest.fixture
def lease_engine(engine: Engine) -> Iterator[Engine]:
    with fresh_table(engine, workers_table) as fresh:
        yield fresh


def test_leases_are_exclusive_and_released(lease_engine: Engine) -> None:
    leases = [WorkerLease(lease_engine, ttl=10, max_worker_id=2) for _ in range(3)]
    assert sorted(lease.worker_id for lease in leases) == [0, 1, 2]
    with pytest.raises(NoWorkerIdError, match="all 3 worker ids"):
        WorkerLease(lease_engine, ttl=10, max_worker_id=2)
    leases[1].close()
    again = WorkerLease(lease_engine, ttl=10, max_worker_id=2)
    assert again.worker_id == leases[1].worker_id
    ids = Snowflake(worker_id=again)
    assert ids.decode(ids()).worker_id == again.worker_id
    for lease in (leases[0], leases[2], again):
        lease.close()
    with pytest.raises(WorkerLeaseLostError, match="it was closed"):
        ids()


def test_expired_lease_is_reclaimed_and_its_generator_stops(lease_engine: Engine) -> None:
    crashed = WorkerLease(lease_engine, ttl=1, max_worker_id=0)
    ids = Snowflake(worker_id=crashed)
    ids()
    crashed._closed.set()  # the process "dies": no more renewals, the row stays
    with pytest.raises(NoWorkerIdError):
        WorkerLease(lease_engine, ttl=1, max_worker_id=0)  # still live for up to a second
    time.sleep(1.3)
    successor = WorkerLease(lease_engine, ttl=10, max_worker_id=0)
    assert successor.worker_id == 0  # reclaimed after expiry
    with pytest.raises(WorkerLeaseLostError):
        ids()  # the old holder refuses to mint with an id someone else may hold
    successor.close()


def test_a_lease_that_cannot_be_renewed_stops_minting(lease_engine: Engine) -> None:
    lease = WorkerLease(lease_engine, ttl=1, max_worker_id=5)
    ids = Snowflake(worker_id=lease)

    def database_unreachable() -> bool:
        raise sa.exc.OperationalError("UPDATE seqkeys_workers", {}, Exception("gone"))

    lease._renew_once = database_unreachable  # type: ignore[method-assign]
    ids()
    time.sleep(1.2)
    with pytest.raises(WorkerLeaseLostError, match="not renewed before it expired"):
        ids()
    lease.close()


def test_renewal_keeps_a_lease_alive_past_its_ttl(lease_engine: Engine) -> None:
    lease = WorkerLease(lease_engine, ttl=1, max_worker_id=0)
    ids = Snowflake(worker_id=lease)
    time.sleep(1.5)  # renewed every third of a second
    assert ids() > 0
    with pytest.raises(NoWorkerIdError):
        WorkerLease(lease_engine, ttl=1, max_worker_id=0)
    lease.close()


@pytest.fixture(params=["postgresql", "mysql"])
def server_lease_engine(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    with fresh_table(engines.get(request.param), workers_table) as fresh:
        yield fresh


@pytest.mark.slow
def test_processes_racing_for_the_last_free_ids(server_lease_engine: Engine) -> None:
    held = [WorkerLease(server_lease_engine, ttl=30, max_worker_id=7) for _ in range(5)]
    url = server_lease_engine.url.render_as_string(hide_password=False)
    context = multiprocessing.get_context("spawn")
    with context.Pool(6) as pool:
        results = pool.starmap(_seq_workers.claim_and_hold, [(url, 7, 3.0)] * 6)
    won = [r for r in results if r is not None]
    assert len(won) == 3, results
    assert len(set(won)) == 3
    assert not set(won) & {lease.worker_id for lease in held}
    for lease in held:
        lease.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() is POSIX-only")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() with threads alive
def test_forked_child_leases_its_own_worker_id(server_lease_engine: Engine) -> None:
    engine = sa.create_engine(server_lease_engine.url)
    lease = WorkerLease(engine, ttl=10, max_worker_id=15)
    ids = Snowflake(worker_id=lease)
    parent_first = ids()

    def child() -> str:
        value = ids()
        assert ids.lease is not None
        ids.lease.close()
        return str(value)

    child_value = int(in_forked_child(child))
    assert ids.decode(child_value).worker_id != lease.worker_id
    assert ids.decode(ids()).worker_id == lease.worker_id == ids.decode(parent_first).worker_id
    lease.close()
    engine.dispose()
