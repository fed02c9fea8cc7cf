"""AsyncWorkerLease holders run as separate processes, each on its own event loop:
``python -m tests.faults._async_lease_procs COMMAND ARGS``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine

from sqlalchemy_seqkeys import NoWorkerIdError, Snowflake, WorkerLeaseLostError
from sqlalchemy_seqkeys.workers import AsyncWorkerLease
from tests._forking import die_with_parent

from ._lease_procs import stop_in_a_renewal, stop_self

#: the minting clock call at which a ``freeze`` holder stops itself
FREEZE_AT_CALL = 300


async def _race(url: str, max_worker_id: int, out_path: str, go_path: str, done_dir: str) -> None:
    engine = create_async_engine(url)
    lease = AsyncWorkerLease(engine, ttl=30, max_worker_id=max_worker_id, create_table=False)
    async with engine.connect() as conn:  # the driver is loaded and connects: the claims race
        await conn.execute(sa.text("SELECT 1"))
    go = Path(go_path)
    while not go.exists():
        await asyncio.sleep(0.005)
    try:
        await lease.start()
        won: int | None = lease.worker_id
    except NoWorkerIdError:
        won = None
    Path(out_path).write_text("none\n" if won is None else f"{won}\n")
    done = Path(done_dir)
    (done / str(os.getpid())).touch()
    deadline = time.monotonic() + 60
    while len(list(done.iterdir())) < int(go.read_text()) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    await lease.close()
    await engine.dispose()


def race(url: str, max_worker_id: str, out_path: str, go_path: str, done_dir: str) -> None:
    """Claim a worker id when ``go_path`` appears; hold it until every racer tried."""
    asyncio.run(_race(url, int(max_worker_id), out_path, go_path, done_dir))


async def _freeze(url: str, ttl: float, out_path: str, where: str) -> None:
    engine = create_async_engine(url)
    lease = AsyncWorkerLease(engine, ttl=ttl, max_worker_id=0, create_table=False)
    await lease.start()
    calls = 0
    minting = False
    woke_at: list[float] = []
    if where == "renewal":
        stop_in_a_renewal(woke_at)

    def clock() -> int:
        nonlocal calls
        # the renewal task reads it too: stop the minting coroutine
        if minting and where == "clock":
            calls += 1
            if calls == FREEZE_AT_CALL:
                woke_at.append(stop_self())
        return time.time_ns()

    ids = Snowflake(worker_id=lease, clock=clock)
    minted: list[int] = []
    outcome = "stopped"
    try:
        # after waking: at most a second more, long enough to mint into the successor's ticks
        while not (woke_at and time.monotonic() > woke_at[0] + 1):
            minting = True
            try:
                minted.append(ids())
            finally:
                minting = False
            await asyncio.sleep(0.0001)  # the renewal task runs between ids
    except WorkerLeaseLostError as exc:
        outcome = f"WorkerLeaseLostError: {exc}"
    Path(out_path).write_text("".join(f"{v}\n" for v in minted) + f"END {outcome}\n")
    os._exit(0)  # as a process that dies: no release


def freeze(url: str, ttl: str, out_path: str, where: str) -> None:
    """Hold worker id 0 on an event loop and mint; SIGSTOP inside a clock read or a
    renewal (``where``); go on after."""
    asyncio.run(_freeze(url, float(ttl), out_path, where))


def command(name: str, *args: object) -> list[str]:
    """The argv that runs ``name`` with ``args`` in a new interpreter."""
    return [sys.executable, "-m", "tests.faults._async_lease_procs", name, *map(str, args)]


COMMANDS: dict[str, Callable[..., None]] = {"race": race, "freeze": freeze}

if __name__ == "__main__":
    die_with_parent()  # not even a killed test run leaves a holder behind
    COMMANDS[sys.argv[1]](*sys.argv[2:])
