"""The block allocator's promise on real engines: no value twice, however the threads interleave.

Every batched strategy hands values out of a block with no lock on the hot
path. These tests run many threads (or asyncio tasks) over tiny blocks, so
that blocks run out, spares are installed and refills land all the time,
with the interpreter switching threads as often as it can, and check that
no value was handed out twice and none allocated was lost.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    BitReversedSequence,
    PooledSequence,
    TableSequence,
    create_table_sequence,
    sequences_table,
)
from sqlalchemy_seqkeys.sequences import _allocator
from sqlalchemy_seqkeys.sequences.table import read_next_value
from tests._forking import libc_fork_when_quiet
from tests._helpers import fresh_table, in_forked_child
from tests.conftest import AsyncDatabase

pytestmark = pytest.mark.backend

THREADS = 12
PER_THREAD = 120


@pytest.fixture
def busy_switching() -> Iterator[None]:
    """Switch threads as often as the interpreter can: every hot-path step may be interrupted."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


@pytest.fixture(params=["postgresql", "mysql"])
def server(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    """PostgreSQL or MariaDB with a fresh sequences table."""
    with fresh_table(engines.get(request.param), sequences_table) as fresh:
        yield fresh


def _hammer(take: Callable[[], int], threads: int = THREADS, each: int = PER_THREAD) -> list[int]:
    """``each`` values per thread from ``threads`` threads started together."""
    taken: list[list[int]] = [[] for _ in range(threads)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(threads)

    def work(out: list[int]) -> None:
        try:
            barrier.wait()
            for _ in range(each):
                out.append(take())
        except BaseException as exc:  # reported below
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(out,)) for out in taken]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert not errors, errors
    return [v for out in taken for v in out]


@pytest.mark.parametrize(
    ("mode", "size", "low"),
    [("batch", 1, 0), ("batch", 3, 0), ("async_batch", 2, 1), ("async_batch", 5, 4)],
)
def test_threads_over_tiny_blocks_never_repeat_nor_lose_a_value(
    server: Engine, busy_switching: None, mode: str, size: int, low: int
) -> None:
    name = f"tiny_{mode}_{size}"
    create_table_sequence(server, name)
    sequence = TableSequence(name, mode=mode, batch_size=size, low_watermark=low)
    values = _hammer(lambda: sequence.next_value(server))
    assert len(values) == THREADS * PER_THREAD
    assert len(values) == len(set(values)), "a value was handed out twice"

    # Drain what the process holds: once a value allocated after this point
    # appears, every value allocated before it has been handed out.
    with server.connect() as conn:
        allocated_up_to = read_next_value(conn, name)
    assert allocated_up_to is not None
    while (value := sequence.next_value(server)) < allocated_up_to:
        values.append(value)
    assert len(values) == len(set(values)), "a value was handed out twice"
    lost = set(range(1, allocated_up_to)) - set(values)
    assert not lost, f"allocated and never handed out: {sorted(lost)[:20]}"


def test_the_locked_hot_path_of_interpreters_without_a_gil(
    server: Engine, busy_switching: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Free-threaded CPython takes the lock on the hot path: this interpreter has a GIL,
    so the switch is forced here (no public way to reach that path on this build)."""
    monkeypatch.setattr(_allocator, "NO_GIL", True)
    create_table_sequence(server, "tiny_locked")
    sequence = TableSequence("tiny_locked", mode="async_batch", batch_size=3, low_watermark=1)
    values = _hammer(lambda: sequence.next_value(server))
    assert len(values) == len(set(values)) == THREADS * PER_THREAD


@pytest.mark.parametrize("size", [1, 3])
def test_threads_over_tiny_pooled_blocks_never_repeat(
    server: Engine, busy_switching: None, size: int
) -> None:
    sequence = PooledSequence(
        f"seqkeys_tiny_pooled_{size}", batch_size=size, table="seqkeys_tiny_seqs"
    )
    sequence.drop(server, checkfirst=True)
    sequence.create(server)
    try:
        values = _hammer(lambda: sequence.next_value(server))
        values += sequence.next_values(server, 50)
    finally:
        sequence.drop(server, checkfirst=True)
        sequences_table(sa.MetaData(), "seqkeys_tiny_seqs").drop(server, checkfirst=True)
    assert len(values) == THREADS * PER_THREAD + 50
    assert len(values) == len(set(values)), "a value was handed out twice"


def test_threads_over_tiny_bit_reversed_blocks_never_repeat(
    server: Engine, busy_switching: None
) -> None:
    sequence = BitReversedSequence("seqkeys_tiny_reversed", batch_size=3, table="seqkeys_tiny_seqs")
    sequence.drop(server, checkfirst=True)
    sequence.create(server)
    try:
        values = _hammer(lambda: sequence.next_value(server))
    finally:
        sequence.drop(server, checkfirst=True)
        sequences_table(sa.MetaData(), "seqkeys_tiny_seqs").drop(server, checkfirst=True)
    assert len(values) == THREADS * PER_THREAD
    assert len(values) == len(set(values)), "a value was handed out twice"


# -- fork: the parent's refill threads are not the child's ----------------------------------


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX-only")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() with threads alive
@pytest.mark.parametrize("how", ["os.fork()", "libc fork()"])
def test_a_child_forked_beside_idle_refill_threads_refills_with_its_own(
    server: Engine, how: str
) -> None:
    """The parent's refill thread waits for work when it forks; the child needs refills."""
    name = f"fork_refills_{how[:4]}"
    create_table_sequence(server, name)
    sequence = TableSequence(
        name, mode="async_batch", batch_size=10, low_watermark=5, refill_timeout=10
    )
    before = sequence.next_values(server, 25)  # past two marks: a refill thread ran here

    def child() -> str:
        server.dispose(close=False)  # SQLAlchemy's rule for forked children
        return " ".join(map(str, sequence.next_values(server, 60)))  # six blocks: refills

    fork = libc_fork_when_quiet if how == "libc fork()" else os.fork
    text = in_forked_child(child, fork=fork)
    assert text[:1].isdigit(), text  # not "SequenceAllocationError: waited 10 s ..."
    child_values = [int(v) for v in text.split()]
    parent_values = before + sequence.next_values(server, 60)
    assert len(child_values) == 60
    assert len(set(child_values)) == 60
    assert len(set(parent_values)) == len(parent_values)
    assert not set(child_values) & set(parent_values), "parent and child shared a value"


# -- asyncio: tasks over tiny blocks, some cancelled while they wait ----------------------


@pytest.fixture
def server_db(async_server_database: AsyncDatabase) -> Iterator[AsyncDatabase]:
    with fresh_table(async_server_database.sync, sequences_table):
        yield async_server_database


@pytest.mark.parametrize(("mode", "low"), [("batch", 0), ("async_batch", 1)])
def test_tasks_cancelled_while_waiting_for_a_block_never_cause_a_repeat(
    server_db: AsyncDatabase, mode: str, low: int
) -> None:
    name = f"cancelled_{mode}"
    create_table_sequence(server_db.sync, name)
    sequence = TableSequence(name, mode=mode, batch_size=2, low_watermark=low)
    rng = random.Random(22)

    async def main() -> list[int]:
        engine = server_db.engine()
        values: list[int] = []

        async def worker() -> None:
            for _ in range(15):
                values.append(await sequence.next_value_async(engine))

        try:
            for _ in range(4):  # rounds: 30 tasks, a third cancelled part way
                tasks = [asyncio.create_task(worker()) for _ in range(30)]
                await asyncio.sleep(0)
                for task in rng.sample(tasks, 10):
                    loop = asyncio.get_running_loop()
                    loop.call_later(rng.uniform(0, 0.05), task.cancel)
                await asyncio.gather(*tasks, return_exceptions=True)
            values.extend(await sequence.next_values_async(engine, 20))  # still works
        finally:
            await engine.dispose()
        return values

    values = asyncio.run(main())
    assert len(values) >= 20 * 15 + 20
    assert len(values) == len(set(values)), "a value was handed out twice"
