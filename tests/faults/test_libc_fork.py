"""A process forked by libc ``fork()`` shares no COMB or UUIDv7 value with its parent.

uWSGI without ``lazy-apps``, C extensions and ``ctypes`` fork through libc,
which runs none of Python's ``os.register_at_fork`` hooks: the child starts
with its parent's generator state (the millisecond, the counter and the block
of buffered random bytes). Before the fix parent and child then minted the
same values whenever they minted in the same millisecond (246 of 20,000 COMB,
16 UUIDv7). Here parent and child mint at once after the fork, the child sends
its values back through a pipe, and no value may appear on both sides.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import registry
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    CombGuidDefault,
    CombLayout,
    Snowflake,
    TableSequence,
    WorkerLease,
    WorkerLeaseLostError,
    create_table_sequence,
    new_comb,
    new_comb_guid,
    new_uuid7,
    sequences_table,
    workers_table,
)
from sqlalchemy_seqkeys import _fork as fork_module
from sqlalchemy_seqkeys import uuid7 as uuid7_module
from sqlalchemy_seqkeys.comb import comb_minter, comb_minter_many
from tests._forking import fork_from_c, libc_fork_when_quiet, no_stragglers  # noqa: F401 - a fixture
from tests._helpers import (
    fresh_table,
    in_forked_child,
    in_threads,
    read_from_child,
    report_from_child,
)

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX-only"),
    pytest.mark.slow,
    pytest.mark.usefixtures("no_stragglers"),  # a hung child is killed, and fails its test
]

PER_PROCESS = 20_000
#: libc fork() once the process's other threads settled: under xdist, a worker's execnet
#: thread that waits for the GIL at the instant of a raw fork hangs the child in CPython
_libc_fork = libc_fork_when_quiet


class _Context:
    """What SQLAlchemy hands a column default: the execution context's dialect."""

    def __init__(self, dialect_name: str) -> None:
        self.dialect = registry.load(dialect_name)()  # no driver is loaded


def _default_on(default: CombGuidDefault, dialect_name: str) -> Callable[[], uuid.UUID]:
    context = _Context(dialect_name)
    return lambda: default(context)


GENERATORS: dict[str, Callable[[], uuid.UUID]] = {
    **{f"new_comb({layout.name})": partial(new_comb, layout) for layout in CombLayout},
    **{f"comb_minter({layout.name})": comb_minter(layout) for layout in CombLayout},
    "new_uuid7": new_uuid7,
    "new_comb_guid on postgresql": _default_on(new_comb_guid, "postgresql"),
    "new_comb_guid on mssql": _default_on(new_comb_guid, "mssql"),
    "new_comb_guid.with_layout('as_binary')": _default_on(
        new_comb_guid.with_layout("as_binary"), "mysql"
    ),
}


def _one_thread(mint: Callable[[], uuid.UUID]) -> Callable[[int], list[uuid.UUID]]:
    return lambda n: [mint() for _ in range(n)]


def _mint_in_parent_and_libc_child(
    mint: Callable[[], uuid.UUID], n: int, mint_n: Callable[[int], list[uuid.UUID]] | None = None
) -> tuple[list[uuid.UUID], list[uuid.UUID]]:
    """``n`` values minted by this process and by a libc-forked child, both at once.

    ``mint_n(n)`` mints the values on each side (default: ``mint`` in a loop).
    """
    mint_n = mint_n or _one_thread(mint)
    mint()  # the generator has state to inherit: a millisecond, a counter, random bytes
    # Both sides start minting at the same millisecond boundary, the moment a
    # pre-fork generator state repeats itself in both processes (after the fork's
    # 50 ms settle).
    start_ns = (time.time_ns() // 1_000_000 + 150) * 1_000_000
    parent: list[uuid.UUID] = []
    text = in_forked_child(
        lambda: " ".join(v.hex for v in mint_n(n)),
        lambda: parent.extend(mint_n(n)),
        fork=_libc_fork,
        start_ns=start_ns,
    )
    assert ":" not in text, f"the child failed to mint: {text}"
    child = [uuid.UUID(hex=v) for v in text.split()]
    assert len(child) == n
    return parent, child


@pytest.mark.parametrize("marker", [fork_module._new_marker, fork_module._PidMarker])
def test_a_fork_marker_reads_0_in_a_libc_forked_child(marker: Callable[[], Any]) -> None:
    # it reads the process token where it was made (what snowflake generators compare)
    mark = marker()
    seen = in_forked_child(lambda: str(mark[0]), fork=_libc_fork)
    assert (mark[0], seen) == (fork_module.process_token(), "0")


@pytest.mark.usefixtures("fork_marker")
@pytest.mark.parametrize("name", list(GENERATORS))
def test_libc_forked_child_shares_no_value_with_its_parent(name: str) -> None:
    parent, child = _mint_in_parent_and_libc_child(GENERATORS[name], PER_PROCESS)
    assert len(child) == PER_PROCESS
    assert len(set(parent)) == PER_PROCESS
    assert len(set(child)) == PER_PROCESS
    shared = set(parent) & set(child)
    assert not shared, f"{len(shared)} of {PER_PROCESS} values minted by both parent and child"


MANY_AT_ONCE: dict[str, tuple[Callable[[], uuid.UUID], Callable[[int], list[uuid.UUID]]]] = {
    **{layout.name: (comb_minter(layout), comb_minter_many(layout)) for layout in CombLayout},
    "new_uuid7": (new_uuid7, uuid7_module.default_generator.mint_many),
}


@pytest.mark.usefixtures("fork_marker")
@pytest.mark.parametrize("name", list(MANY_AT_ONCE))
def test_a_libc_forked_child_minting_many_at_once_shares_nothing(name: str) -> None:
    """An executemany's values, minted at once (comb_minter_many, the UUIDv7 default's
    mint_many), after a libc fork()."""
    one, many = MANY_AT_ONCE[name]
    parent, child = _mint_in_parent_and_libc_child(
        one, PER_PROCESS, lambda n: [v for _ in range(n // 100) for v in many(100)]
    )
    assert len(set(parent)) == len(set(child)) == PER_PROCESS
    shared = set(parent) & set(child)
    assert not shared, f"{len(shared)} of {PER_PROCESS} values minted by both parent and child"


@pytest.mark.usefixtures("fork_marker")
def test_libc_forked_child_keeps_minting_order() -> None:
    # the child's values still sort after everything it inherited
    before = [new_uuid7() for _ in range(100)]
    _, child = _mint_in_parent_and_libc_child(new_uuid7, 2_000)
    assert sorted(before + child) == before + child


@pytest.mark.usefixtures("fork_marker")
def test_threads_started_first_in_a_libc_forked_child_share_nothing() -> None:
    # The child's first values come from four threads at once: one of them
    # resets the inherited state, and none mints from it.
    def four_threads(n: int) -> list[uuid.UUID]:
        return [v for out in in_threads(new_comb_as_string, 4, n // 4) for v in out]

    new_comb_as_string = partial(new_comb, CombLayout.AS_STRING)
    parent, child = _mint_in_parent_and_libc_child(new_comb_as_string, PER_PROCESS, four_threads)
    assert len(set(child)) == PER_PROCESS
    assert not set(parent) & set(child)


@pytest.mark.usefixtures("fork_marker")
@pytest.mark.parametrize("how", ["os.fork", "libc fork"])
def test_a_forked_child_draws_a_process_token_of_its_own(how: str) -> None:
    # what snowflake generators can compare on each mint (the one fork registry)
    parent = fork_module.process_token()

    def child() -> str:
        first = fork_module.process_token()
        again = fork_module.process_token()
        return f"{first},{again}"

    data = in_forked_child(child, fork=os.fork if how == "os.fork" else _libc_fork)
    first, again = (int(x) for x in data.split(","))
    assert first == again != parent
    assert fork_module.process_token() == parent


# -- a process with a background thread, forked from C as uWSGI's master forks -------------
#
# CPython itself hangs a child forked by a bare libc fork() while another Python
# thread waited for the GIL (a lease's renewal, a table sequence's refill, any
# thread): the child inherits the waiter's request for the GIL, and its first
# hand-over waits forever for a thread that does not exist there, before any
# library code runs. PyOS_AfterFork_Child() re-creates the GIL first: os.fork()
# calls it, after PyOS_BeforeFork() in the parent, and so does uWSGI with
# --py-call-uwsgi-fork-hooks. Called without PyOS_BeforeFork() (uWSGI's
# --py-call-osafterfork alone), Python 3.13 aborts the child ("Fatal Python
# error: _PyRecursiveMutex_Unlock": it releases an import lock that
# PyOS_BeforeFork() would have taken), so the C helper pairs them. The library's part: a
# child that runs gets ids and values of its own, and waits on no lock a
# parent's thread held. docs/production.md ("Forks") says which forks are safe.

#: busy C time before each fork: past CPython's 5 ms switch interval, so a
#: thread that woke meanwhile is waiting for the GIL, and has asked for it
BUSY_US = 8_000
CHILD_TIMEOUT_S = 10.0


@pytest.fixture(scope="module")
def c_fork(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int, bool], int]:
    return fork_from_c(tmp_path_factory.mktemp("fork_from_c"))


def _in_child_forked_from_c(
    fork: Callable[[int, bool], int],
    after_fork_child: bool,
    child: Callable[[], str],
    timeout: float = CHILD_TIMEOUT_S,
) -> str | None:
    """What ``child`` returned in a child forked from C; None if the child hung (killed)."""
    read_fd, write_fd = os.pipe()
    pid = fork(BUSY_US, after_fork_child)
    if pid == 0:  # pragma: no cover - runs in the child
        report_from_child(child, read_fd, write_fd)
    assert pid > 0, f"fork() failed: {ctypes.get_errno()}"
    os.close(write_fd)
    try:
        return read_from_child(read_fd, pid, timeout)
    finally:
        os.close(read_fd)
        os.waitpid(pid, 0)


@pytest.fixture
def pg(engines: Any) -> Engine:
    engine: Engine = engines.get("postgresql")
    return engine


@pytest.mark.slow
def test_a_leasing_process_forked_from_c_with_after_fork_never_hangs_a_child(
    c_fork: Callable[[int, bool], int], pg: Engine
) -> None:
    """200 children of a process renewing a 0.3 s lease, each leasing its own worker id."""
    with fresh_table(pg, workers_table):
        engine = sa.create_engine(pg.url)
        lease = WorkerLease(engine, ttl=0.3, max_worker_id=1023).start()
        ids = Snowflake(worker_id=lease)

        def mint() -> int:
            # On a loaded machine the child's own 0.3 s lease can lapse before
            # its first renewal: that call raises, and the next leases anew.
            for _ in range(3):
                try:
                    return ids()
                except WorkerLeaseLostError:
                    pass
            return ids()

        def child() -> str:
            minted = [mint() for _ in range(50)]
            assert isinstance(ids.lease, WorkerLease)
            ids.lease.close()
            return " ".join(map(str, minted))

        outputs = [_in_child_forked_from_c(c_fork, True, child) for _ in range(200)]
        lease.close()
        engine.dispose()
    assert outputs.count(None) == 0, f"{outputs.count(None)} of 200 children hung"
    failed = [text for text in outputs if text is not None and not text[:1].isdigit()]
    assert not failed, failed[:3]
    minted = [int(v) for text in outputs if text for v in text.split()]
    assert len(minted) == len(set(minted)) == 200 * 50


@pytest.mark.slow
def test_a_refilling_process_forked_from_c_with_after_fork_never_hangs_a_child(
    c_fork: Callable[[int, bool], int], pg: Engine
) -> None:
    """200 children of a process whose async_batch sequence refills in threads."""
    with fresh_table(pg, sequences_table):
        create_table_sequence(pg, "refilled")
        engine = sa.create_engine(pg.url)
        sequence = TableSequence("refilled", mode="async_batch", batch_size=20, low_watermark=10)
        parent: list[int] = []

        def child() -> str:
            engine.dispose(close=False)  # SQLAlchemy's rule in a forked child
            return " ".join(map(str, sequence.next_values(engine, 10)))

        outputs = []
        for _ in range(200):
            parent += sequence.next_values(engine, 30)  # a refill thread is often under way
            outputs.append(_in_child_forked_from_c(c_fork, True, child))
        engine.dispose()
    assert outputs.count(None) == 0, f"{outputs.count(None)} of 200 children hung"
    failed = [text for text in outputs if text is not None and not text[:1].isdigit()]
    assert not failed, failed[:3]
    taken = [int(v) for text in outputs if text for v in text.split()]
    assert len(taken) == len(set(taken)) == 200 * 10
    assert not set(taken) & set(parent)


@pytest.mark.slow
@pytest.mark.parametrize(
    "thread", ["a lease's renewal", "async_batch refills", "a plain Python thread"]
)
def test_without_after_fork_cpython_can_hang_the_child(
    c_fork: Callable[[int, bool], int], pg: Engine, thread: str
) -> None:
    """The documented limit: a bare fork() beside a thread that wants the GIL.

    No library code runs in these children, and a plain thread does the same:
    the hang is CPython's (measured: 41 of 300 children of a 0.3 s lease, 71 of
    200 of a process refilling an async_batch sequence).
    """
    stop = threading.Event()
    with fresh_table(pg, workers_table), fresh_table(pg, sequences_table):
        engine = sa.create_engine(pg.url)
        lease: WorkerLease | None = None
        sequence: TableSequence | None = None
        if thread == "a lease's renewal":
            lease = WorkerLease(engine, ttl=0.3).start()
        elif thread == "async_batch refills":
            create_table_sequence(engine, "refilled")
            sequence = TableSequence(
                "refilled", mode="async_batch", batch_size=20, low_watermark=10
            )
        else:

            def wakes_up() -> None:
                while not stop.wait(0.01):
                    sum(range(1000))

            threading.Thread(target=wakes_up, daemon=True).start()
        try:
            hung = 0
            for _ in range(150):
                if sequence is not None:
                    sequence.next_values(engine, 30)  # a refill thread is often under way
                if _in_child_forked_from_c(c_fork, False, lambda: "ran", timeout=2.0) is None:
                    hung += 1
                    break  # shown; the child was killed
        finally:
            stop.set()
            if lease is not None:
                lease.close()
            engine.dispose()
    assert hung, "no child hung: CPython may have fixed it; update docs/production.md"
