"""AsyncWorkerLease's state is its sync lease's: read through, read only, documented
(no I/O here: a lease's constructor never touches the database)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from sqlalchemy_seqkeys import AsyncWorkerLease, WorkerIdNotBoundError
from sqlalchemy_seqkeys._lease import is_lease

READ_THROUGH = ["worker_id", "valid", "floor_ms", "mark_ms", "closed"]


@pytest.fixture
def lease() -> Iterator[AsyncWorkerLease]:
    engine: AsyncEngine = create_async_engine("sqlite+aiosqlite://")
    yield AsyncWorkerLease(engine)
    engine.sync_engine.dispose()


def test_the_state_is_the_sync_leases(lease: AsyncWorkerLease) -> None:
    sync = lease.sync_lease
    with pytest.raises(WorkerIdNotBoundError):
        lease.worker_id  # noqa: B018 - the read raises, as the sync lease's does
    assert (lease.valid, lease.closed) == (sync.valid, sync.closed) == (False, False)
    sync._worker_id, sync._floor_ms, sync._mark_ms = 5, 1_000, 2_000
    assert (lease.worker_id, lease.floor_ms, lease.mark_ms) == (5, 1_000, 2_000)
    assert lease.reclaimable is False
    assert is_lease(lease)


@pytest.mark.parametrize("name", READ_THROUGH)
def test_the_state_is_read_only(lease: AsyncWorkerLease, name: str) -> None:
    with pytest.raises(AttributeError, match=f"AsyncWorkerLease.{name} is read only"):
        setattr(lease, name, 1)
    assert name not in vars(lease)


@pytest.mark.parametrize("name", READ_THROUGH)
def test_the_state_cannot_be_deleted(lease: AsyncWorkerLease, name: str) -> None:
    with pytest.raises(AttributeError, match=f"AsyncWorkerLease.{name} is read only"):
        delattr(lease, name)


@pytest.mark.parametrize("name", READ_THROUGH)
def test_each_attribute_is_documented(name: str) -> None:
    doc = getattr(AsyncWorkerLease, name).__doc__ or ""
    assert len(doc) > 20, doc  # help() shows what it is
    assert "_FromSyncLease" not in doc
    if name == "worker_id":
        assert "WorkerIdNotBoundError" in doc
