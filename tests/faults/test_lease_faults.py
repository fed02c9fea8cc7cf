"""Worker-id leases under faults: a frozen holder, clocks that run ahead, a DST hour.

Each test reproduces a fault that made two holders of one worker id mint the
same snowflake ids (or let a live lease be taken), and asserts that no id is
minted twice:

- a holder frozen (SIGSTOP) past its ttl between the lease check and the clock
  read, or just after a renewal's UPDATE (where a row lock held until a COMMIT
  would make the successor wait), while another process takes the worker id
  (real processes);
- a clean handover, and a crash (SIGKILL), with the first holder's clock
  ahead of the next one's by 250 ms and by more than the ttl;
- a MariaDB session in ``America/New_York`` inside the repeated autumn hour,
  on a private server with the zone tables loaded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import NoWorkerIdError, Snowflake, WorkerLease, workers_table
from sqlalchemy_seqkeys.workers import server_now_ms
from tests._forking import no_stragglers  # noqa: F401 - a fixture
from tests._helpers import fresh_table
from tests._servers import private_mariadb_url  # noqa: F401 - a fixture

from . import _async_lease_procs
from ._lease_procs import claim, command, mint_paced, read_ids, shifted_clock

pytestmark = [
    pytest.mark.backend,
    pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="POSIX signals"),
    pytest.mark.usefixtures("no_stragglers"),  # a helper left running is killed, and fails
]

ROOT = Path(__file__).resolve().parents[2]
TTL = 1.0  # short leases keep each test to a few seconds; shorter ones lapsed under load
#: the successor's lease: how long the frozen holder's lasts is what the test waits for, so
#: the successor can afford renewals that survive a loaded machine's pauses
SUCCESSOR_TTL = 3.0
# (two test workers beside the servers on 2 cores starved a 0.5 s lease of its renewals)
PROCESS_TIMEOUT = 60.0


@pytest.fixture
def lease_engine(engine: Engine) -> Iterator[Engine]:
    with fresh_table(engine, workers_table) as fresh:
        yield fresh


@pytest.fixture(params=["postgresql", "mysql"])
def server_url(request: pytest.FixtureRequest, engines: Any) -> Iterator[str]:
    """A database of its own on a real server, holding an empty lease table."""
    with engines.fresh_database(request.param, "lease") as url:
        engine = sa.create_engine(url)
        workers_table(sa.MetaData()).create(engine)
        engine.dispose()
        yield url


_logs: dict[int, Path] = {}


def _start(
    name: str, *args: object, argv: Callable[..., list[str]] = command
) -> subprocess.Popen[bytes]:
    """Run a helper of ``_lease_procs``; its output goes to a file beside its first path."""
    log = Path(f"{next(a for a in args if isinstance(a, Path))}.log")
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv(name, *args),
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    _logs[process.pid] = log
    return process


def _output(process: subprocess.Popen[bytes]) -> str:
    return _logs[process.pid].read_text(errors="replace")[-3000:]


def _wait_for_file(path: Path, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + PROCESS_TIMEOUT
    while not path.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"{path.name} never appeared; the helper said:\n{_output(process)}")
        time.sleep(0.01)


def _wait_until_stopped(process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + PROCESS_TIMEOUT
    while True:
        pid, status = os.waitpid(process.pid, os.WUNTRACED | os.WNOHANG)
        if pid and os.WIFSTOPPED(status):
            return
        if pid:  # it ended instead of stopping
            process.returncode = os.waitstatus_to_exitcode(status)
            pytest.fail(f"the holder exited before it froze:\n{_output(process)}")
        if time.monotonic() > deadline:
            pytest.fail("the holder never froze")
        time.sleep(0.01)


def _kill(*processes: subprocess.Popen[bytes]) -> None:
    for process in processes:
        if process.poll() is None:
            process.kill()  # SIGKILL also ends a stopped process
            process.wait()


def _past(ids: Snowflake, held: list[int], minted: list[int]) -> Callable[[], bool]:
    """Whether ``minted`` holds 200 ids and the clock is 100 ms past the last of ``held``."""
    end_ms = max(int(ids.decode(v).timestamp.timestamp() * 1000) for v in held) + 100
    return lambda: len(minted) >= 200 and time.time_ns() // 1_000_000 > end_ms


#: the sync URL's async driver, for a holder on an event loop
_ASYNC_DRIVERS = {"postgresql": "postgresql+asyncpg", "mysql": "mysql+asyncmy"}


@pytest.mark.slow
@pytest.mark.parametrize("holder", ["thread", "asyncio"])
@pytest.mark.parametrize("where", ["clock", "renewal"])
def test_a_holder_frozen_past_its_ttl_raises_instead_of_minting(
    server_url: str, tmp_path: Path, holder: str, where: str
) -> None:
    """Frozen inside a clock read (mid-mint), or just after a renewal's UPDATE (mid-renewal:
    the row must not stay locked, or the successor waits on the frozen process)."""
    frozen_out, successor_out, stop = (
        tmp_path / "frozen.txt",
        tmp_path / "successor.txt",
        tmp_path / "stop",
    )
    if holder == "asyncio":  # an AsyncWorkerLease renewed by a task, minting from a coroutine
        url = sa.make_url(server_url)
        async_url = url.set(drivername=_ASYNC_DRIVERS[url.get_backend_name()])
        frozen = _start(
            "freeze",
            async_url.render_as_string(hide_password=False),
            TTL,
            frozen_out,
            where,
            argv=_async_lease_procs.command,
        )
    else:
        frozen = _start("freeze", server_url, TTL, frozen_out, where)
    successor: subprocess.Popen[bytes] | None = None
    try:
        _wait_until_stopped(frozen)
        successor = _start("successor", server_url, SUCCESSOR_TTL, successor_out, stop)
        _wait_for_file(Path(f"{successor_out}.ready"), successor)  # it holds the id now
        time.sleep(0.2)
        os.kill(frozen.pid, signal.SIGCONT)
        frozen.wait(timeout=PROCESS_TIMEOUT)
        stop.touch()
        successor.wait(timeout=PROCESS_TIMEOUT)
    finally:
        _kill(frozen, *([successor] if successor else []))
    assert frozen.returncode == 0, _output(frozen)
    assert successor.returncode == 0, _output(successor)
    frozen_ids, frozen_outcome = read_ids(frozen_out)
    successor_ids, successor_outcome = read_ids(successor_out)
    assert successor_outcome == "stopped"
    assert len(successor_ids) > 100
    twice = set(frozen_ids) & set(successor_ids)
    assert not twice, f"{len(twice)} ids minted by both the frozen holder and its successor"
    # it woke, read the clock, found its lease gone, and refused
    assert frozen_outcome is not None
    assert frozen_outcome.startswith("WorkerLeaseLostError"), frozen_outcome
    assert "not renewed before it expired" in frozen_outcome or "taken over" in frozen_outcome


@pytest.mark.slow
@pytest.mark.parametrize("ahead_ms", [250, TTL * 1000 + 300], ids=["250ms", "more-than-ttl"])
def test_clean_handover_from_a_holder_whose_clock_runs_ahead(
    lease_engine: Engine, ahead_ms: float
) -> None:
    first = WorkerLease(lease_engine, ttl=TTL, max_worker_id=0).start()
    ahead = Snowflake(worker_id=first, clock=shifted_clock(ahead_ms))
    held: list[int] = []
    until = time.monotonic() + 0.3
    assert mint_paced(ahead, lambda: time.monotonic() > until, held) == "stopped"
    first.close()

    # The lowest free id is the one just released: taken at once. Its start waits for the
    # clock to pass the first holder's ids (up to 1.3 s ahead), renewing meanwhile: a
    # successor's ttl, whose renewals survive a loaded machine (a 1 s one lapsed there)
    second = WorkerLease(lease_engine, ttl=SUCCESSOR_TTL, max_worker_id=0).start()
    assert second.worker_id == first.worker_id
    ids = Snowflake(worker_id=second)
    minted: list[int] = []
    assert mint_paced(ids, _past(ids, held, minted), minted) == "stopped"
    second.close()
    twice = set(held) & set(minted)
    assert not twice, f"{len(twice)} of {len(held)} ids minted by both holders"
    assert min(minted) > max(held)  # the next holder's ids all come after


@pytest.mark.slow
def test_crashed_holder_whose_clock_ran_ahead_by_more_than_the_ttl(
    server_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "held.txt"
    holder = _start("hold", server_url, TTL, TTL * 1000 + 300, out)
    try:
        _wait_for_file(Path(f"{out}.ready"), holder)
        time.sleep(0.4)  # renewed at least once
    finally:
        _kill(holder)  # SIGKILL: no close, the row stays until it expires
    held, outcome = read_ids(out)
    assert outcome is None  # killed mid-mint
    assert held

    engine = sa.create_engine(server_url)
    try:
        lease = claim(engine, TTL)  # as soon as the dead holder's row expires
        ids = Snowflake(worker_id=lease)
        minted: list[int] = []
        assert mint_paced(ids, _past(ids, held, minted), minted) == "stopped"
        lease.close()
    finally:
        engine.dispose()
    twice = set(held) & set(minted)
    assert not twice, f"{len(twice)} of {len(held)} ids minted by both holders"
    assert min(minted) > max(held)


# -- the repeated autumn hour on MariaDB ------------------------------------------------

NEW_YORK = "America/New_York"
#: 2025-11-02, New York: 01:00-02:00 happens twice, first EDT (UTC-4), then EST (UTC-5)
REPEATED_HOUR = {
    "01:30:00.5 EDT": 1762061400.5,
    "01:59:50 EDT": 1762063190,
    "01:30:00 EST": 1762065000,
    "01:59:50 EST": 1762066790,
    "02:00:00 EST": 1762066800,
}


def _engine_at(url: str, unix_seconds: float) -> Engine:
    """Sessions in New York whose server clock stands at ``unix_seconds``."""
    engine = sa.create_engine(url)

    @sa.event.listens_for(engine, "connect")
    def _set_clock(dbapi_connection: Any, record: Any) -> None:
        with dbapi_connection.cursor() as cursor:
            cursor.execute(f"SET time_zone = '{NEW_YORK}'")
            cursor.execute(f"SET timestamp = {unix_seconds}")

    return engine


def _frozen(unix_seconds: float) -> Any:
    return lambda: int(unix_seconds * 1_000_000_000)


@pytest.mark.parametrize("local", list(REPEATED_HOUR))
def test_server_time_is_right_inside_the_repeated_hour(
    private_mariadb_url: str,  # noqa: F811 - the fixture imported above
    local: str,
) -> None:
    unix_seconds = REPEATED_HOUR[local]
    engine = _engine_at(private_mariadb_url, unix_seconds)
    try:
        with engine.connect() as conn:
            assert conn.scalar(sa.text("SELECT @@session.time_zone")) == NEW_YORK
            assert conn.scalar(sa.select(server_now_ms())) == int(unix_seconds * 1000)
    finally:
        engine.dispose()


def test_a_live_lease_is_not_taken_in_the_repeated_hour(
    private_mariadb_url: str,  # noqa: F811 - the fixture imported above
) -> None:
    # Renewed at 01:59:50 EST, asked for at 02:00:00 EST: ten seconds into a
    # 30 s lease. UNIX_TIMESTAMP(NOW(3)) read 01:59:50 as EDT, an hour early,
    # so the lease looked long expired.
    held_at, asked_at = REPEATED_HOUR["01:59:50 EST"], REPEATED_HOUR["02:00:00 EST"]
    holder_engine = _engine_at(private_mariadb_url, held_at)
    taker_engine = _engine_at(private_mariadb_url, asked_at)
    workers_table(sa.MetaData()).drop(holder_engine, checkfirst=True)
    holder = WorkerLease(holder_engine, ttl=30, max_worker_id=0, clock=_frozen(held_at)).start()
    try:
        with pytest.raises(NoWorkerIdError, match="leased by live processes"):
            WorkerLease(taker_engine, ttl=30, max_worker_id=0, clock=_frozen(asked_at)).start()
    finally:
        holder.close()
        workers_table(sa.MetaData()).drop(holder_engine, checkfirst=True)
        holder_engine.dispose()
        taker_engine.dispose()
