"""Worker-id leases in the database: exclusive, renewed, reclaimed, fatal when lost, and
bounded in time by a high-water mark that the next holder waits to pass."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    InvalidSnowflakeError,
    NoWorkerIdError,
    Snowflake,
    WorkerLease,
    WorkerLeaseLostError,
    rotate_digits,
    unrotate_digits,
    workers_table,
)
from sqlalchemy_seqkeys.workers import ClockSkewError, LeaseTableOutdatedError
from tests._helpers import fresh_table, in_forked_child, in_threads
from tests.faults import _lease_procs

pytestmark = pytest.mark.backend

ROOT = Path(__file__).resolve().parents[2]


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
    ttl = _short_ttl(lease_engine)
    crashed = WorkerLease(lease_engine, ttl=ttl, max_worker_id=0)
    ids = Snowflake(worker_id=crashed)
    ids()
    crashed._closed.set()  # the process "dies": no more renewals, the row stays
    with pytest.raises(NoWorkerIdError):
        WorkerLease(lease_engine, ttl=ttl, max_worker_id=0)  # still live for up to a ttl
    time.sleep(ttl + 0.3)
    successor = WorkerLease(lease_engine, ttl=10, max_worker_id=0)
    assert successor.worker_id == 0  # reclaimed after expiry
    with pytest.raises(WorkerLeaseLostError):
        ids()  # the old holder refuses to mint with an id someone else may hold
    successor.close()


def _short_ttl(engine: Engine) -> float:
    # the emulator runs one read-write transaction at a time: on a busy machine a
    # renewal can take longer than a second, and the lease is (rightly) lost
    return 3.0 if engine.dialect.name == "spanner" else 1.0


def test_a_lease_that_cannot_be_renewed_stops_minting(lease_engine: Engine) -> None:
    ttl = _short_ttl(lease_engine)
    lease = WorkerLease(lease_engine, ttl=ttl, max_worker_id=5)
    ids = Snowflake(worker_id=lease)

    def database_unreachable(at_least_ms: int = 0) -> None:
        raise sa.exc.OperationalError("UPDATE seqkeys_workers", {}, Exception("gone"))

    lease._renew_once = database_unreachable  # type: ignore[method-assign]
    ids()
    time.sleep(ttl + 0.2)
    with pytest.raises(WorkerLeaseLostError, match="not renewed before it expired"):
        ids()
    lease.close()


def test_renewal_keeps_a_lease_alive_past_its_ttl(lease_engine: Engine) -> None:
    ttl = _short_ttl(lease_engine)
    lease = WorkerLease(lease_engine, ttl=ttl, max_worker_id=0)
    ids = Snowflake(worker_id=lease)
    time.sleep(ttl * 1.5)  # renewed every third of the ttl
    assert ids() > 0
    with pytest.raises(NoWorkerIdError):
        WorkerLease(lease_engine, ttl=ttl, max_worker_id=0)
    lease.close()


def test_rebinding_to_a_new_lease_while_threads_mint(lease_engine: Engine) -> None:
    """The Flask/Celery pattern: declared unbound, bound at startup, rebound after a loss.

    The first lease stops being renewed (a hung process) and expires; the next
    lease of the worker id starts past its high-water mark. Threads mint all
    along: they get WorkerLeaseLostError between the loss and the rebind, and
    no id twice.
    """
    ids = Snowflake()  # in the models module
    ttl = _short_ttl(lease_engine)
    first = WorkerLease(lease_engine, ttl=ttl, max_worker_id=0)
    ids.bind(first)  # in the app factory / worker_process_init
    stop = threading.Event()
    refused: list[int] = []

    def mint() -> list[int]:
        out: list[int] = []
        while not stop.is_set():
            try:
                out.append(ids())
            except WorkerLeaseLostError:
                refused.append(1)
                time.sleep(0.001)
        return out

    results: list[list[int]] = [[] for _ in range(3)]
    threads = [threading.Thread(target=lambda o=o: o.extend(mint())) for o in results]
    for t in threads:
        t.start()
    time.sleep(0.2)
    first._closed.set()  # its renewals stop; its row stays until it expires
    time.sleep(ttl + 0.3)
    second = WorkerLease(lease_engine, ttl=10, max_worker_id=0)
    assert second.worker_id == first.worker_id  # the same id, taken over after expiry
    ids.bind(second)
    time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join()
    every = [v for out in results for v in out]
    assert refused  # the lost lease refused to mint
    assert len(set(every)) == len(every)
    by_first = [v for v in every if _ms_of(ids, v) <= first._mark_ms]
    by_second = [v for v in every if _ms_of(ids, v) > first._mark_ms]
    assert by_first
    assert by_second
    assert min(by_second) > max(by_first)
    second.close()


def _row(engine: Engine, worker_id: int) -> Any:
    t = workers_table(sa.MetaData())
    with engine.connect() as conn:
        return conn.execute(sa.select(t).where(t.c.worker_id == worker_id)).one()


def _ms_of(ids: Snowflake, value: int) -> int:
    return int(ids.decode(value).timestamp.timestamp() * 1000)


def test_close_releases_the_row_and_keeps_its_high_water_mark(lease_engine: Engine) -> None:
    lease = WorkerLease(lease_engine, ttl=10, max_worker_id=3)
    ids = Snowflake(worker_id=lease)
    assert _row(lease_engine, lease.worker_id).high_water_ms >= time.time_ns() // 1_000_000 + 9000
    minted = [ids() for _ in range(1000)]
    lease.close()
    row = _row(lease_engine, lease.worker_id)
    assert row.expires_at == 0  # released, not deleted
    # lowered to the last millisecond actually minted, which the next holder must pass
    assert row.high_water_ms == _ms_of(ids, max(minted))
    again = WorkerLease(lease_engine, ttl=10, max_worker_id=3)
    assert again.worker_id == lease.worker_id
    assert min(Snowflake(worker_id=again)() for _ in range(10)) > max(minted)
    again.close()


def test_renewal_moves_the_high_water_mark_on(lease_engine: Engine) -> None:
    lease = WorkerLease(lease_engine, ttl=_short_ttl(lease_engine), max_worker_id=0)
    first = _row(lease_engine, 0).high_water_ms
    deadline = time.monotonic() + 10  # renewed every third of the ttl: well before this
    while _row(lease_engine, 0).high_water_ms <= first and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _row(lease_engine, 0).high_water_ms > first
    assert lease.valid
    lease.close()


def test_generators_bound_to_one_lease_share_its_sequence(lease_engine: Engine) -> None:
    lease = WorkerLease(lease_engine, ttl=10, max_worker_id=3)
    a, b = Snowflake(worker_id=lease), Snowflake(worker_id=lease, transform=rotate_digits)
    minted = [v for out in in_threads(lambda: (a(), unrotate_digits(b())), 4, 5000) for v in out]
    every = [v for pair in minted for v in pair]
    assert len(set(every)) == len(every) == 4 * 5000 * 2
    with pytest.raises(InvalidSnowflakeError, match="must agree"):
        Snowflake(worker_id=lease, on_clock_backwards="raise")
    with pytest.raises(InvalidSnowflakeError, match="must agree"):
        Snowflake(worker_id=lease, clock=lambda: time.time_ns() + 1)
    lease.close()
    with pytest.raises(WorkerLeaseLostError, match="it was closed"):
        Snowflake(worker_id=lease)


def test_a_clock_far_from_the_servers_is_refused(lease_engine: Engine) -> None:
    hour_ahead = _lease_procs.shifted_clock(3_600_000)
    with pytest.raises(ClockSkewError, match=r"\+3[56]\d\d\.\d+ s from the database server's"):
        WorkerLease(lease_engine, ttl=10, clock=hour_ahead)
    t = workers_table(sa.MetaData())
    with lease_engine.connect() as conn:
        assert conn.scalar(sa.select(sa.func.count()).select_from(t)) == 0  # nothing claimed
    lease = WorkerLease(lease_engine, ttl=10, clock=hour_ahead, max_skew=3700)
    lease.close()


def test_the_next_holder_waits_for_its_clock_then_names_the_skew(lease_engine: Engine) -> None:
    first = WorkerLease(lease_engine, ttl=10, max_worker_id=0, max_skew=10)
    ahead = Snowflake(worker_id=first, clock=_lease_procs.shifted_clock(3000))
    minted = [ahead() for _ in range(100)]
    first.close()
    with pytest.raises(ClockSkewError, match=r"ids reach \d+ ms past this host's clock") as info:
        WorkerLease(lease_engine, ttl=10, max_worker_id=0, max_wait=0.3)
    assert "max_wait=0.3 s" in str(info.value)
    # nothing was minted, and the row still holds the first holder's mark
    row = _row(lease_engine, 0)
    assert row.expires_at == 0
    assert row.high_water_ms == _ms_of(ahead, max(minted))
    patient = WorkerLease(lease_engine, ttl=10, max_worker_id=0, max_wait=10)  # waits ~3 s
    assert Snowflake(worker_id=patient)() > max(minted)
    patient.close()


def test_a_clock_that_jumps_forward_extends_the_mark_at_once(lease_engine: Engine) -> None:
    jump = [0]
    lease = WorkerLease(lease_engine, ttl=2, max_worker_id=0, max_skew=30)
    ids = Snowflake(worker_id=lease, clock=lambda: time.time_ns() + jump[0])
    before = ids()
    jump[0] = 20 * 1_000_000_000  # 20 s: ten ttls past the mark
    after = ids()  # renews on the spot to move the mark past it
    assert after > before
    assert _row(lease_engine, 0).high_water_ms >= _ms_of(ids, after)
    lease.close()


def test_an_old_lease_table_is_named_with_its_fix(lease_engine: Engine) -> None:
    workers_table(sa.MetaData()).drop(lease_engine)
    old = sa.Table(
        "seqkeys_workers",
        sa.MetaData(),
        sa.Column("worker_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("owner", sa.String(64), nullable=False),
        sa.Column("expires_at", sa.BigInteger, nullable=False),
    )
    old.create(lease_engine)
    try:
        with pytest.raises(LeaseTableOutdatedError, match="has no 'high_water_ms' column") as info:
            WorkerLease(lease_engine, ttl=10)
        assert "op.upgrade_worker_lease_table()" in str(info.value)
    finally:
        old.drop(lease_engine)
        workers_table(sa.MetaData()).create(lease_engine)


@pytest.fixture(params=["postgresql", "mysql"])
def server_lease_engine(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    with fresh_table(engines.get(request.param), workers_table) as fresh:
        yield fresh


@pytest.mark.slow
def test_processes_racing_for_the_last_free_ids(
    server_lease_engine: Engine, tmp_path: Path
) -> None:
    # Six processes claim at one moment and hold until all six have tried, so
    # every claim overlaps every other: exactly the three free ids are won.
    held = [WorkerLease(server_lease_engine, ttl=30, max_worker_id=7) for _ in range(5)]
    url = server_lease_engine.url.render_as_string(hide_password=False)
    go, done = tmp_path / "go", tmp_path / "done"
    done.mkdir()
    outs = [tmp_path / f"racer{i}.txt" for i in range(6)]
    racers = [
        subprocess.Popen(_lease_procs.command("race", url, 7, out, go, done), cwd=ROOT)
        for out in outs
    ]
    try:
        time.sleep(1.0)  # every racer has started and connected
        go.write_text(str(len(racers)))
        for racer in racers:
            assert racer.wait(timeout=60) == 0
    finally:
        for racer in racers:
            if racer.poll() is None:
                racer.kill()
                racer.wait()
    results = [out.read_text().strip() for out in outs]
    won = [int(r) for r in results if r != "none"]
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
