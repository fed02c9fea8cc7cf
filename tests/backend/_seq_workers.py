"""Code that runs in separate processes for the sequence load and fault tests."""

from __future__ import annotations

import os
import random
import sys
import threading

import sqlalchemy as sa

from sqlalchemy_seqkeys import TableSequence


def take_values(url: str, name: str, mode: str, threads: int, per_thread: int) -> list[int]:
    """``threads`` threads each take ``per_thread`` values; all values, per thread in order."""
    engine = sa.create_engine(url, pool_size=threads + 2, max_overflow=threads + 2)
    sequence = TableSequence(name, mode=mode, batch_size=200, low_watermark=50)
    results: list[list[int]] = [[] for _ in range(threads)]
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def work(out: list[int]) -> None:
        try:
            start.wait()
            for _ in range(per_thread):
                out.append(sequence.next_value(engine))
        except BaseException as exc:  # reported to the parent below
            errors.append(exc)

    pool = [threading.Thread(target=work, args=(out,)) for out in results]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    engine.dispose()
    if errors:
        raise errors[0]
    return [v for out in results for v in out]


def commit_or_roll_back(
    url: str, name: str, rows_table: str, threads: int, per_thread: int, seed: int
) -> int:
    """in_transaction values used in row inserts, a fifth of them rolled back; returns commits."""
    engine = sa.create_engine(url, pool_size=threads + 2, max_overflow=0)
    sequence = TableSequence(name, mode="in_transaction")
    rows = sa.table(rows_table, sa.column("id", sa.BigInteger))
    committed = [0] * threads
    errors: list[BaseException] = []

    def work(index: int) -> None:
        rng = random.Random(seed * 1000 + index)
        try:
            for _ in range(per_thread):
                with engine.connect() as conn:
                    trans = conn.begin()
                    value = sequence.next_value(conn)
                    conn.execute(sa.insert(rows).values(id=value))
                    if rng.random() < 0.2:
                        trans.rollback()
                    else:
                        trans.commit()
                        committed[index] += 1
        except BaseException as exc:  # reported to the parent below
            errors.append(exc)

    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    engine.dispose()
    if errors:
        raise errors[0]
    return sum(committed)


def take_until_killed(url: str, name: str, mode: str, out_path: str) -> None:
    """Take values forever, writing each to ``out_path`` before using the next (SIGKILL me)."""
    engine = sa.create_engine(url)
    sequence = TableSequence(name, mode=mode, batch_size=500, low_watermark=100)
    with open(out_path, "a", buffering=1) as out:
        while True:
            out.write(f"{sequence.next_value(engine)}\n")


if __name__ == "__main__":  # python -m tests.backend._seq_workers URL NAME MODE OUT
    take_until_killed(*sys.argv[1:5])
    os._exit(0)  # pragma: no cover


def claim_and_hold(url: str, max_worker_id: int, hold_seconds: float) -> int | None:
    """Claim a worker id, hold it for a while (overlapping the other racers), release it."""
    from sqlalchemy_seqkeys import NoWorkerIdError, WorkerLease

    engine = sa.create_engine(url)
    try:
        lease = WorkerLease(engine, ttl=30, max_worker_id=max_worker_id, create_table=False).start()
    except NoWorkerIdError:
        engine.dispose()
        return None
    import time

    time.sleep(hold_seconds)
    lease.close()
    engine.dispose()
    return lease.worker_id
