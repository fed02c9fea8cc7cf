"""Lease holders run as separate processes by the fault tests (so that they can be
SIGSTOPped and SIGKILLed): ``python -m tests.faults._lease_procs COMMAND ARGS``.

Each writes the ids it minted to a file, one decimal id per line, and its
outcome as a last line ``END <outcome>``.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from sqlalchemy_seqkeys import NoWorkerIdError, Snowflake, WorkerLease, WorkerLeaseLostError
from tests._forking import die_with_parent

#: the clock call at which a ``freeze`` holder stops itself
FREEZE_AT_CALL = 300


def read_ids(path: Path) -> tuple[list[int], str | None]:
    """The ids a helper wrote, and its outcome (None if it was killed before the end)."""
    ids, outcome = [], None
    for line in path.read_text().splitlines():
        if line.startswith("END "):
            outcome = line[4:]
        elif line.strip():
            ids.append(int(line))
    return ids, outcome


def shifted_clock(offset_ms: float) -> Callable[[], int]:
    """``time.time_ns`` running ``offset_ms`` ahead."""
    offset = int(offset_ms * 1_000_000)
    return lambda: time.time_ns() + offset


def claim(engine: sa.Engine, ttl: float, timeout: float = 20.0) -> WorkerLease:
    """Worker id 0, as soon as its holder's lease expires."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return WorkerLease(engine, ttl=ttl, max_worker_id=0, create_table=False).start()
        except NoWorkerIdError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def mint_paced(ids: Snowflake, until: Callable[[], bool], out: list[int]) -> str:
    """Mint several ids per millisecond until ``until()``; the outcome."""
    try:
        while not until():
            out.append(ids())
            time.sleep(0.0001)
    except WorkerLeaseLostError as exc:
        return f"WorkerLeaseLostError: {exc}"
    return "stopped"


def stop_self() -> float:
    """SIGSTOP this process; return ``time.monotonic()`` once it runs again.

    The stop reaches the calling thread only after the kernel has stopped the
    others, so a clock read right after ``kill`` can come before it (a vDSO
    read is no system call): the short sleep, a system call, is where this
    thread stops, and the reading comes after the process was continued.
    """
    os.kill(os.getpid(), signal.SIGSTOP)
    time.sleep(0.05)
    return time.monotonic()


def stop_in_a_renewal(woke_at: list[float]) -> None:
    """SIGSTOP this process once, just after a renewal's UPDATE of the lease row ran.

    The moment a process paused mid-renewal (a VM suspended, a long GC) would hold
    the row's lock if the UPDATE waited for a COMMIT: every successor would wait on it.
    """

    def after(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if not woke_at and statement.startswith("UPDATE seqkeys_workers SET expires_at"):
            woke_at.append(stop_self())

    sa.event.listen(sa.engine.Engine, "after_cursor_execute", after)  # every engine's


def freeze(url: str, ttl: float, out_path: str, where: str = "clock") -> None:
    """Hold worker id 0 and mint; stop (SIGSTOP) inside a clock read, or a renewal
    (``where="renewal"``); go on when continued.

    The stop lands between the lease check and the clock read of a generator
    that checks first (the race that let a woken holder mint a successor's ids).
    """
    engine = sa.create_engine(url)
    lease = WorkerLease(engine, ttl=ttl, max_worker_id=0, create_table=False).start()
    calls = 0
    woke_at: list[float] = []
    if where == "renewal":
        stop_in_a_renewal(woke_at)

    def clock() -> int:
        nonlocal calls
        if where != "clock" or threading.current_thread() is not threading.main_thread():
            return time.time_ns()  # the renewal thread reads it too: stop the minting one
        calls += 1
        if calls == FREEZE_AT_CALL:
            woke_at.append(stop_self())
        return time.time_ns()

    ids = Snowflake(worker_id=lease, clock=clock)
    minted: list[int] = []
    # after waking: at most a second more, long enough to mint into the successor's ticks
    outcome = mint_paced(ids, lambda: bool(woke_at) and time.monotonic() > woke_at[0] + 1, minted)
    Path(out_path).write_text("".join(f"{v}\n" for v in minted) + f"END {outcome}\n")
    os._exit(0)


def successor(url: str, ttl: float, out_path: str, stop_path: str) -> None:
    """Take worker id 0 once it is free; mint until ``stop_path`` exists."""
    engine = sa.create_engine(url)
    lease = claim(engine, ttl)
    ids = Snowflake(worker_id=lease)
    minted = [ids()]
    Path(out_path + ".ready").touch()
    stop = Path(stop_path)
    outcome = mint_paced(ids, stop.exists, minted)
    lease.close()
    Path(out_path).write_text("".join(f"{v}\n" for v in minted) + f"END {outcome}\n")
    os._exit(0)


def hold_until_killed(url: str, ttl: float, offset_ms: float, out_path: str) -> None:
    """Hold worker id 0 with a clock ``offset_ms`` ahead; write each id as minted (SIGKILL me)."""
    engine = sa.create_engine(url)
    lease = WorkerLease(engine, ttl=ttl, max_worker_id=0, create_table=False).start()
    ids = Snowflake(worker_id=lease, clock=shifted_clock(offset_ms))
    fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.write(fd, f"{ids()}\n".encode())
    Path(out_path + ".ready").touch()
    while True:  # each id is on disk before the next is minted
        os.write(fd, f"{ids()}\n".encode())
        time.sleep(0.0001)


def race(url: str, max_worker_id: int, out_path: str, go_path: str, done_dir: str) -> None:
    """Claim a worker id at the moment ``go_path`` appears; hold it until every racer tried."""
    engine = sa.create_engine(url)
    with engine.connect() as conn:  # connected before the start: the claims race
        conn.execute(sa.text("SELECT 1"))
    go = Path(go_path)
    while not go.exists():
        time.sleep(0.005)
    try:
        lease: WorkerLease | None = WorkerLease(
            engine, ttl=30, max_worker_id=max_worker_id, create_table=False
        ).start()
    except NoWorkerIdError:
        lease = None
    Path(out_path).write_text("none\n" if lease is None else f"{lease.worker_id}\n")
    done = Path(done_dir)
    (done / str(os.getpid())).touch()
    deadline = time.monotonic() + 60
    while len(list(done.iterdir())) < int(go.read_text()) and time.monotonic() < deadline:
        time.sleep(0.01)
    if lease is not None:
        lease.close()
    os._exit(0)


COMMANDS: dict[str, Callable[..., None]] = {
    "freeze": lambda url, ttl, out, where: freeze(url, float(ttl), out, where),
    "successor": lambda url, ttl, out, stop: successor(url, float(ttl), out, stop),
    "hold": lambda url, ttl, offset, out: hold_until_killed(url, float(ttl), float(offset), out),
    "race": lambda url, top, out, go, done: race(url, int(top), out, go, done),
}


def command(name: str, *args: object) -> list[str]:
    """The argv that runs ``name`` with ``args`` in a new interpreter."""
    return [sys.executable, "-m", "tests.faults._lease_procs", name, *map(str, args)]


if __name__ == "__main__":
    die_with_parent()  # not even a killed test run leaves a holder behind
    COMMANDS[sys.argv[1]](*sys.argv[2:])
