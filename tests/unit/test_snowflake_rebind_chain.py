"""A call that began on a binding thousands of rebinds ago: it follows the generator to its
current binding in a loop, not one nested call a binding (a RecursionError in the threads
that minted while a generator was rebound 3,000 times), and no id comes out twice."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import Snowflake, WorkerLease

#: more hops than the recursion limit allows nested calls
REBINDS = 3 * sys.getrecursionlimit()


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[sa.Engine]:
    """A fresh SQLite file: its lease table hands out worker id 0 first."""
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'leases.db'}")
    yield engine
    engine.dispose()


def test_a_call_from_thousands_of_fixed_bindings_ago_mints_on_the_current_one() -> None:
    # worker ids no other test of this process uses (the ticks a binding leaves carry over)
    ids = Snowflake(worker_id=611)
    first = ids()
    started = ids._mint  # a call that read the generator's minter, then lost the GIL
    for i in range(REBINDS):
        ids.bind(612 if i % 2 == 0 else 611)
    late = started()
    now = ids()
    assert len({first, late, now}) == 3
    assert ids.decode(late).worker_id == ids.decode(now).worker_id == 611


def test_a_call_from_thousands_of_lease_bindings_ago_mints_on_the_current_one(
    engine: sa.Engine,
) -> None:
    # fixed 0 -> the lease holding 0 -> fixed 0 ...: every hop passes through the lease's
    # (shared, never stopped) sequence, whose slow path sends it on
    ids = Snowflake(worker_id=0)
    with WorkerLease(engine) as lease:
        assert lease.worker_id == 0
        first = ids()
        started = ids._mint
        for i in range(REBINDS):
            ids.bind(lease if i % 2 == 0 else 0)
        late = started()
        now = ids()
    assert len({first, late, now}) == 3


def test_threads_minting_while_a_generator_is_rebound_thousands_of_times(
    engine: sa.Engine,
) -> None:
    # the reviewer's stress: three threads mint without pause while one rebinds the
    # generator 3,000 times between the lease and its worker id fixed; none raises
    ids = Snowflake(worker_id=0)
    stop = threading.Event()
    minted: list[list[int]] = [[], [], []]
    errors: list[BaseException] = []

    def spin(out: list[int]) -> None:
        try:
            while not stop.is_set():
                out.append(ids())
        except BaseException as exc:  # reported below
            errors.append(exc)

    with WorkerLease(engine) as lease:
        threads = [threading.Thread(target=spin, args=(out,)) for out in minted]
        for t in threads:
            t.start()
        try:
            for i in range(3000):
                ids.bind(lease if i % 2 == 0 else 0)
        finally:
            stop.set()
            for t in threads:
                t.join()
    every = [v for out in minted for v in out]
    assert not errors, errors[:1]
    assert every
    assert len(set(every)) == len(every)
