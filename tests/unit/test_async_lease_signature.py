"""AsyncWorkerLease spells out WorkerLease's keywords: what IDEs, docs and
``inspect.signature`` show, and what a misspelt keyword is told (no I/O here:
a lease's constructor never touches the database)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from sqlalchemy_seqkeys import AsyncWorkerLease, InvalidLeaseError, WorkerLease

KEYWORDS = ["ttl", "table", "max_worker_id", "create_table", "clock", "max_skew", "max_wait"]


@pytest.fixture
def engine() -> Iterator[AsyncEngine]:
    engine = create_async_engine("sqlite+aiosqlite://")
    yield engine
    engine.sync_engine.dispose()


def _keywords(cls: type) -> dict[str, object]:
    engine, *keywords = inspect.signature(cls).parameters.values()
    assert engine.name == "engine"
    assert all(param.kind is inspect.Parameter.KEYWORD_ONLY for param in keywords)
    return {param.name: param.default for param in keywords}


def test_the_signature_shows_every_keyword_of_worker_lease() -> None:
    shown = _keywords(AsyncWorkerLease)
    assert list(shown) == KEYWORDS
    # the same names, order and defaults as WorkerLease: the two cannot drift apart
    assert shown == _keywords(WorkerLease)
    assert shown["ttl"] == 30.0
    assert shown["clock"] is None


def test_an_unknown_keyword_is_refused_by_name(engine: AsyncEngine) -> None:
    with pytest.raises(TypeError, match=r"AsyncWorkerLease.*unexpected keyword argument 'tll'"):
        AsyncWorkerLease(engine, tll=30)  # type: ignore[call-arg]


def test_the_keywords_are_keyword_only(engine: AsyncEngine) -> None:
    with pytest.raises(TypeError, match="positional argument"):
        AsyncWorkerLease(engine, 30)  # type: ignore[misc]


def test_each_keyword_reaches_the_sync_lease(engine: AsyncEngine) -> None:
    def clock() -> int:
        return 1_700_000_000_000_000_000

    lease = AsyncWorkerLease(
        engine,
        ttl=12.0,
        table="my_workers",
        max_worker_id=7,
        create_table=False,
        clock=clock,
        max_skew=0.5,
        max_wait=1.5,
    )
    sync = lease.sync_lease
    assert sync.table.name == lease.table.name == "my_workers"
    for name, value in [
        ("ttl", 12.0),
        ("max_worker_id", 7),
        ("create_table", False),
        ("max_skew", 0.5),
        ("max_wait", 1.5),
    ]:
        assert getattr(sync, name) == getattr(lease, name) == value, name
    assert sync.clock() == lease.clock() == clock()


def test_defaults_are_worker_lease_defaults(engine: AsyncEngine) -> None:
    lease = AsyncWorkerLease(engine)
    assert (lease.ttl, lease.max_worker_id, lease.create_table) == (30.0, 1023, True)
    assert (lease.max_skew, lease.max_wait, lease.table.name) == (2.0, 5.0, "seqkeys_workers")


def test_a_bad_value_is_still_checked_by_worker_lease(engine: AsyncEngine) -> None:
    with pytest.raises(InvalidLeaseError, match="ttl"):
        AsyncWorkerLease(engine, ttl=-1)
