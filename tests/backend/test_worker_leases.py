"""Worker-id leases in the database: exclusive, renewed, reclaimed, fatal when lost, and
bounded in time by a high-water mark that the next holder waits to pass."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    InvalidLeaseError,
    InvalidSnowflakeError,
    NoWorkerIdError,
    SeqKeysError,
    Snowflake,
    WorkerIdNotBoundError,
    WorkerIdsExhaustedError,
    WorkerLease,
    WorkerLeaseDatabaseError,
    WorkerLeaseLostError,
    rotate_digits,
    unrotate_digits,
    workers_table,
)
from sqlalchemy_seqkeys.workers import ClockSkewError, LeaseTableOutdatedError, server_now_ms
from tests._forking import libc_fork_when_quiet
from tests._helpers import fresh_table, in_forked_child, in_threads
from tests._leases import mint_or_refuse, ms_of, race_for_free_ids, split_at_mark
from tests.conftest import PG_ENGINE_NAMES
from tests.faults import _lease_procs

pytestmark = pytest.mark.backend


@pytest.fixture
def lease_engine(engine: Engine) -> Iterator[Engine]:
    with fresh_table(engine, workers_table) as fresh:
        yield fresh


def test_leases_are_exclusive_and_released(lease_engine: Engine) -> None:
    leases = [WorkerLease(lease_engine, ttl=10, max_worker_id=2).start() for _ in range(3)]
    assert sorted(lease.worker_id for lease in leases) == [0, 1, 2]
    with pytest.raises(WorkerIdsExhaustedError, match="all 3 worker ids"):
        WorkerLease(lease_engine, ttl=10, max_worker_id=2).start()
    leases[1].close()
    again = WorkerLease(lease_engine, ttl=10, max_worker_id=2).start()
    assert again.worker_id == leases[1].worker_id
    ids = Snowflake(worker_id=again)
    assert ids.decode(ids()).worker_id == again.worker_id
    for lease in (leases[0], leases[2], again):
        lease.close()
    with pytest.raises(WorkerLeaseLostError, match="it was closed"):
        ids()


def test_expired_lease_is_reclaimed_and_its_generator_stops(lease_engine: Engine) -> None:
    ttl = _short_ttl(lease_engine)
    crashed = WorkerLease(lease_engine, ttl=ttl, max_worker_id=0).start()
    ids = Snowflake(worker_id=crashed)
    ids()
    crashed._closed.set()  # the process "dies": no more renewals, the row stays
    with pytest.raises(NoWorkerIdError):
        WorkerLease(lease_engine, ttl=ttl, max_worker_id=0).start()  # still live for up to a ttl
    time.sleep(ttl + 0.3)
    successor = WorkerLease(lease_engine, ttl=10, max_worker_id=0).start()
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
    lease = WorkerLease(lease_engine, ttl=ttl, max_worker_id=5).start()
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
    lease = WorkerLease(lease_engine, ttl=ttl, max_worker_id=0).start()
    ids = Snowflake(worker_id=lease)
    time.sleep(ttl * 1.5)  # renewed every third of the ttl
    assert ids() > 0
    with pytest.raises(NoWorkerIdError):
        WorkerLease(lease_engine, ttl=ttl, max_worker_id=0).start()
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
    first = WorkerLease(lease_engine, ttl=ttl, max_worker_id=0).start()
    ids.bind(first)  # in the app factory / worker_process_init
    stop = threading.Event()
    refused: list[int] = []

    def mint() -> list[int]:
        out: list[int] = []
        while not stop.is_set():
            if not mint_or_refuse(ids, out, refused):
                time.sleep(0.001)
        return out

    results: list[list[int]] = [[] for _ in range(3)]
    threads = [threading.Thread(target=lambda o=o: o.extend(mint())) for o in results]
    for t in threads:
        t.start()
    time.sleep(0.2)
    first._closed.set()  # its renewals stop; its row stays until it expires
    time.sleep(ttl + 0.3)
    second = WorkerLease(lease_engine, ttl=10, max_worker_id=0).start()
    assert second.worker_id == first.worker_id  # the same id, taken over after expiry
    ids.bind(second)
    time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join()
    every = [v for out in results for v in out]
    assert refused  # the lost lease refused to mint
    assert len(set(every)) == len(every)
    by_first, by_second = split_at_mark(ids, every, first._mark_ms)
    assert by_first
    assert by_second
    assert min(by_second) > max(by_first)
    second.close()


def _row(engine: Engine, worker_id: int) -> Any:
    t = workers_table(sa.MetaData())
    with engine.connect() as conn:
        return conn.execute(sa.select(t).where(t.c.worker_id == worker_id)).one()


def test_close_releases_the_row_and_keeps_its_high_water_mark(lease_engine: Engine) -> None:
    lease = WorkerLease(lease_engine, ttl=10, max_worker_id=3).start()
    ids = Snowflake(worker_id=lease)
    assert _row(lease_engine, lease.worker_id).high_water_ms >= time.time_ns() // 1_000_000 + 9000
    minted = [ids() for _ in range(1000)]
    lease.close()
    row = _row(lease_engine, lease.worker_id)
    assert row.expires_at == 0  # released, not deleted
    # lowered to the last millisecond actually minted, which the next holder must pass
    assert row.high_water_ms == ms_of(ids, max(minted))
    again = WorkerLease(lease_engine, ttl=10, max_worker_id=3).start()
    assert again.worker_id == lease.worker_id
    assert min(Snowflake(worker_id=again)() for _ in range(10)) > max(minted)
    again.close()


def test_renewal_moves_the_high_water_mark_on(lease_engine: Engine) -> None:
    lease = WorkerLease(lease_engine, ttl=_short_ttl(lease_engine), max_worker_id=0).start()
    first = _row(lease_engine, 0).high_water_ms
    deadline = time.monotonic() + 10  # renewed every third of the ttl: well before this
    while _row(lease_engine, 0).high_water_ms <= first and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _row(lease_engine, 0).high_water_ms > first
    assert lease.valid
    lease.close()


def test_generators_bound_to_one_lease_share_its_sequence(lease_engine: Engine) -> None:
    lease = WorkerLease(lease_engine, ttl=10, max_worker_id=3).start()
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
        WorkerLease(lease_engine, ttl=10, clock=hour_ahead).start()
    t = workers_table(sa.MetaData())
    with lease_engine.connect() as conn:
        assert conn.scalar(sa.select(sa.func.count()).select_from(t)) == 0  # nothing claimed
    lease = WorkerLease(lease_engine, ttl=10, clock=hour_ahead, max_skew=3700).start()
    lease.close()


def test_the_next_holder_waits_for_its_clock_then_names_the_skew(lease_engine: Engine) -> None:
    first = WorkerLease(lease_engine, ttl=10, max_worker_id=0, max_skew=10).start()
    ahead = Snowflake(worker_id=first, clock=_lease_procs.shifted_clock(3000))
    minted = [ahead() for _ in range(100)]
    first.close()
    with pytest.raises(ClockSkewError, match=r"ids reach \d+ ms past this host's clock") as info:
        WorkerLease(lease_engine, ttl=10, max_worker_id=0, max_wait=0.3).start()
    assert "max_wait=0.3 s" in str(info.value)
    # nothing was minted, and the row still holds the first holder's mark
    row = _row(lease_engine, 0)
    assert row.expires_at == 0
    assert row.high_water_ms == ms_of(ahead, max(minted))
    patient = WorkerLease(lease_engine, ttl=10, max_worker_id=0, max_wait=10).start()  # waits ~3 s
    assert Snowflake(worker_id=patient)() > max(minted)
    patient.close()


def test_a_clock_that_jumps_forward_extends_the_mark_at_once(lease_engine: Engine) -> None:
    jump = [0]
    lease = WorkerLease(lease_engine, ttl=2, max_worker_id=0, max_skew=30).start()
    ids = Snowflake(worker_id=lease, clock=lambda: time.time_ns() + jump[0])
    before = ids()
    jump[0] = 20 * 1_000_000_000  # 20 s: ten ttls past the mark
    after = ids()  # renews on the spot to move the mark past it
    assert after > before
    assert _row(lease_engine, 0).high_water_ms >= ms_of(ids, after)
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
            WorkerLease(lease_engine, ttl=10).start()
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
    held = [WorkerLease(server_lease_engine, ttl=30, max_worker_id=7).start() for _ in range(5)]
    url = server_lease_engine.url.render_as_string(hide_password=False)
    results = race_for_free_ids(_lease_procs.command, url, tmp_path, settle_s=1.0)
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
    lease = WorkerLease(engine, ttl=10, max_worker_id=15).start()
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


# -- database errors on the lease paths; a forked child's lost lease (issue 21) -------------


def _unknown_database(engine: Engine) -> Engine:
    """An engine of the same server whose database does not exist: every connect fails."""
    if engine.dialect.name == "sqlite":
        return sa.create_engine("sqlite:////nonexistent-seqkeys-dir/ids.db")
    database = str(engine.url.database or "")
    if "/databases/" in database:  # Spanner: projects/P/instances/I/databases/D
        return sa.create_engine(engine.url.set(database=database.rsplit("/", 1)[0] + "/nosuchdb"))
    return sa.create_engine(engine.url.set(database="nosuchdb_x"))


def test_a_claim_the_database_refuses_is_a_seqkeys_error(lease_engine: Engine) -> None:
    engine = _unknown_database(lease_engine)
    try:
        with pytest.raises(WorkerLeaseDatabaseError, match="could not claim a worker id") as info:
            WorkerLease(engine, ttl=10).start()
    finally:
        engine.dispose()
    assert "then claim again" in str(info.value)
    assert info.value.__cause__ is not None  # the driver's error, kept


@pytest.fixture(params=PG_ENGINE_NAMES)
def pg_lease_url(request: pytest.FixtureRequest, engines: Any) -> Iterator[str]:
    """A database of its own, which a test may make refuse connections."""
    with engines.fresh_database(request.param, "lease") as url:
        engine = sa.create_engine(url)
        workers_table(sa.MetaData()).create(engine)
        engine.dispose()
        yield url


@contextlib.contextmanager
def _refusing_connections(url: str) -> Iterator[sa.Connection]:
    """Every new connection to ``url``'s database is refused by the server (PostgreSQL's
    ALLOW_CONNECTIONS), as by a server out of connection slots; yields a connection to
    the server's ``postgres`` database, and lets connections in again afterwards."""
    database = sa.make_url(url).database
    admin = sa.create_engine(
        sa.make_url(url).set(database="postgres"),
        poolclass=sa.pool.NullPool,
        isolation_level="AUTOCOMMIT",
    )
    with admin.connect() as conn:
        name = conn.dialect.identifier_preparer.quote(str(database))
        conn.execute(sa.text(f"ALTER DATABASE {name} ALLOW_CONNECTIONS false"))
        try:
            yield conn
        finally:
            conn.execute(sa.text(f"ALTER DATABASE {name} ALLOW_CONNECTIONS true"))
    admin.dispose()


def _backend_of(engine: Engine) -> int:
    """The server's id of the one connection in ``engine``'s pool (pool_size=1)."""
    sql = (
        "SELECT pg_backend_pid()"
        if engine.dialect.name == "postgresql"
        else "SELECT CONNECTION_ID()"
    )
    with engine.connect() as conn:
        return int(conn.scalar(sa.text(sql)))


def _drop_connection(admin: sa.Connection, backend: int) -> None:
    if admin.dialect.name == "postgresql":
        admin.execute(sa.text("SELECT pg_terminate_backend(:p)"), {"p": backend})
    else:
        admin.execute(sa.text(f"KILL {int(backend)}"))
    time.sleep(0.2)  # the server has closed it


def test_close_on_a_connection_the_server_dropped_releases_on_a_new_one(
    server_lease_engine: Engine,
) -> None:
    engine = sa.create_engine(server_lease_engine.url, pool_size=1, max_overflow=0)
    lease = WorkerLease(engine, ttl=10, max_worker_id=3).start()
    ids = Snowflake(worker_id=lease)
    ids()
    with server_lease_engine.connect() as admin:
        _drop_connection(admin, _backend_of(engine))
    lease.close()  # raised the driver's OperationalError before
    assert _row(server_lease_engine, lease.worker_id).expires_at == 0  # released
    engine.dispose()


def test_a_close_that_cannot_reach_the_server_closes_here_and_says_so(
    pg_lease_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    engine = sa.create_engine(pg_lease_url, pool_size=1, max_overflow=0)
    lease = WorkerLease(engine, ttl=10, max_worker_id=3).start()
    ids = Snowflake(worker_id=lease)
    last = ids()
    with _refusing_connections(pg_lease_url) as admin:
        _drop_connection(admin, _backend_of(engine))
        with caplog.at_level(logging.WARNING, logger="sqlalchemy_seqkeys.workers"):
            lease.close()  # raised the driver's OperationalError before
    assert "could not release worker id" in caplog.text
    assert "expires by itself at most ttl=10 s" in caplog.text
    assert not lease.valid
    renewal = f"seqkeys-lease-{lease.worker_id}-{lease.owner[:8]}"  # the renewal thread's name
    assert not any(t.name == renewal and t.is_alive() for t in threading.enumerate())
    with pytest.raises(WorkerLeaseLostError, match="it was closed"):
        ids()
    row = _row(engine, lease.worker_id)
    assert row.expires_at > 0  # still leased on the server, until it expires
    assert row.high_water_ms >= ms_of(ids, last)  # and its mark covers what was minted
    engine.dispose()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() is POSIX-only")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() with threads alive
def test_a_forked_child_whose_claim_is_refused_raises_then_claims_again(
    pg_lease_url: str,
) -> None:
    engine = sa.create_engine(pg_lease_url)
    lease = WorkerLease(engine, ttl=10, max_worker_id=15).start()
    ids = Snowflake(worker_id=lease)
    ids()

    def child() -> str:
        out = []
        with _refusing_connections(pg_lease_url):
            for _ in range(2):
                start = time.monotonic()
                try:
                    ids()
                    out.append("minted")
                except SeqKeysError as exc:
                    took = time.monotonic() - start
                    cause = type(exc.__cause__).__name__
                    out.append(f"{type(exc).__name__}|{cause}|{took:.3f}|{exc}")
        time.sleep(1.2)  # past the first backoff (1 s)
        value = ids()
        assert ids.lease is not None
        ids.lease.close()
        return "\n".join([*out, f"minted {ids.decode(value).worker_id}"])

    said = in_forked_child(child)
    assert said.count("\n") == 2, said  # an exception in the child comes back as one line
    first, second, third = said.split("\n")
    name, cause, _, message = first.split("|", 3)
    assert (name, cause) == ("WorkerLeaseDatabaseError", "OperationalError"), first
    assert "not currently accepting connections" in message
    assert "claims again" in message
    # at once, without asking the server again: the backoff
    name, cause, took, message = second.split("|", 3)
    assert (name, cause) == ("WorkerLeaseDatabaseError", "OperationalError"), second
    assert "not tried again yet" in message  # the server was not asked: the backoff
    assert float(took) < 0.5
    assert third.startswith("minted ")
    assert int(third.split()[1]) != lease.worker_id
    lease.close()
    engine.dispose()


_FORKS = {"os.fork": os.fork, "libc fork": libc_fork_when_quiet}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() is POSIX-only")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() with threads alive
@pytest.mark.parametrize("fork", list(_FORKS))
@pytest.mark.parametrize("loss", ["taken over", "deleted"])
def test_a_forked_childs_lost_lease_is_claimed_anew(
    server_lease_engine: Engine, loss: str, fork: str
) -> None:
    """The child's implicit lease is lost: its next id raises once, then it leases anew."""
    engine = sa.create_engine(server_lease_engine.url)
    lease = WorkerLease(engine, ttl=1.0, max_worker_id=15).start()
    ids = Snowflake(worker_id=lease)
    parent = [ids() for _ in range(1000)]
    url = server_lease_engine.url

    def child() -> str:
        minted = [ids() for _ in range(1000)]
        first = ids.lease
        assert first is not None
        t = workers_table(sa.MetaData())
        other = sa.create_engine(url, poolclass=sa.pool.NullPool)  # "another process"
        with other.begin() as conn:
            row = t.c.worker_id == first.worker_id
            if loss == "taken over":
                conn.execute(
                    sa.update(t)
                    .where(row)
                    .values(owner="another", expires_at=server_now_ms() + 60_000)
                )
            else:
                conn.execute(sa.delete(t).where(row))
        other.dispose()
        errors = []
        deadline = time.monotonic() + 10
        while not errors and time.monotonic() < deadline:
            try:
                minted.append(ids())
            except WorkerLeaseLostError as exc:
                errors.append(exc)
            time.sleep(0.001)
        minted += [ids() for _ in range(1000)]  # no error: a new lease
        second = ids.lease
        assert second is not None
        assert second is not first
        second.close()
        return f"{len(errors)} {first.worker_id} {second.worker_id} " + " ".join(map(str, minted))

    text = in_forked_child(child, fork=_FORKS[fork])
    errors, first, second, *rest = text.split()
    assert errors == "1", text[:300]
    if loss == "taken over":
        assert second != first  # the id is another process's now
    child_ids = [int(v) for v in rest]
    assert len(child_ids) == len(set(child_ids)) >= 2000
    parent += [ids() for _ in range(1000)]
    assert not set(child_ids) & set(parent)
    lease.close()
    engine.dispose()


# -- the lifecycle: constructing does no I/O, with/start() claims ---------------------


def test_constructing_a_lease_does_no_io_and_start_claims() -> None:
    # A server that is not there: nothing is asked of it until start().
    engine = sa.create_engine("postgresql+psycopg://nobody@127.0.0.1:1/none")
    lease = WorkerLease(engine, ttl=10)
    assert not lease.valid
    assert repr(lease).startswith("WorkerLease(unclaimed")
    with pytest.raises(WorkerLeaseDatabaseError, match="could not claim a worker id"):
        lease.start()
    with pytest.raises(InvalidLeaseError, match="was closed"):
        lease.start()  # a failed start leaves it closed: a lease is claimed once
    lease.close()  # harmless
    engine.dispose()


def test_a_lease_is_started_once(lease_engine: Engine) -> None:
    with WorkerLease(lease_engine, ttl=10, max_worker_id=3) as lease:
        assert lease.valid
        with pytest.raises(InvalidLeaseError, match="started already") as raised:
            lease.start()
        assert isinstance(raised.value, InvalidSnowflakeError)  # old except clauses still work
    with pytest.raises(InvalidLeaseError, match="was closed"):
        lease.start()


def test_an_unstarted_lease_raises_the_not_bound_error_for_a_generator_only_after_warning(
    lease_engine: Engine,
) -> None:
    # The 0.x behaviour, deprecated: the lease claims when first used.
    lease = WorkerLease(lease_engine, ttl=10, max_worker_id=3)
    with pytest.deprecated_call(match=r"WorkerLease\(engine\)\.start\(\)"):
        ids = Snowflake(worker_id=lease)
    assert lease.valid
    assert ids.decode(ids()).worker_id == lease.worker_id
    lease.close()
    with pytest.raises(WorkerLeaseLostError, match="it was closed"):
        ids()


def test_a_closed_unstarted_lease_has_no_worker_id(lease_engine: Engine) -> None:
    lease = WorkerLease(lease_engine, ttl=10)
    lease.close()  # never started: nothing to release
    with pytest.raises(WorkerIdNotBoundError, match="has not claimed a worker id yet"):
        lease.worker_id  # noqa: B018
    with pytest.raises(NoWorkerIdError):  # the common base
        Snowflake(worker_id=lease)


def test_lease_arguments_raise_the_lease_error() -> None:
    engine = sa.create_engine("sqlite://")
    for bad in ({"ttl": 0}, {"max_worker_id": -1}, {"table": ""}, {"max_wait": "5"}):
        with pytest.raises(InvalidLeaseError) as raised:
            WorkerLease(engine, **bad)  # type: ignore[arg-type]
        assert isinstance(raised.value, InvalidSnowflakeError)
    with pytest.raises(InvalidLeaseError, match=r"use sqlalchemy\.create_engine"):
        WorkerLease("sqlite://")  # type: ignore[arg-type]
