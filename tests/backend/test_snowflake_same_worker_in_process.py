"""A lease's generator, then a fixed worker id in the same process: once the lease is
closed (its sequence halted), a Snowflake with the worker id it held starts after the
last tick the lease's generator minted, whatever its clock."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import Snowflake, WorkerLease


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[sa.Engine]:
    """A fresh SQLite file: its lease table hands out worker id 0."""
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'leases.db'}")
    yield engine
    engine.dispose()


def _ahead() -> int:
    return time.time_ns() + 300_000_000


@pytest.mark.parametrize("trial", range(3))
def test_a_fixed_id_after_a_closed_lease_on_it_repeats_none_of_its_ids(
    engine: sa.Engine, trial: int
) -> None:
    with WorkerLease(engine, ttl=1, max_worker_id=0, table=f"ltf{trial}") as lease:
        leased = Snowflake(worker_id=lease, clock=_ahead)
        first = [leased() for _ in range(3000)]
        worker_id = lease.worker_id
    fixed = Snowflake(worker_id=worker_id)
    later: list[int] = []
    end = time.monotonic() + 0.6
    while time.monotonic() < end:
        later.append(fixed())
    every = first + later
    assert len(set(every)) == len(every), f"{len(every) - len(set(every))} ids minted twice"
