"""``python -m benchmarks sequences``: the perf tool of Spanner's sequence-generation guide.

Spanner's sequence-generation guide measures its four sequence generators
with a perf tool; this is that tool, on any engine. Each iteration takes one
value and uses it in a simulated application transaction of ``--txn-ms``
milliseconds on the same engine (a statement, then a sleep, then COMMIT);
``--threads`` threads share ``--iterations`` iterations. Modes, named as in
the guide:

- ``sync``: ``TableSequence`` ``in_transaction`` (the value is taken inside
  the application transaction, whose row lock it then holds);
- ``async``: ``separate`` (a short transaction of its own, then the
  application transaction);
- ``batch`` and ``async_batch``: blocks of ``--batch-size`` values
  (``--low-watermark`` for the background refill);
- ``none``: the same transaction with no key at all: the ceiling;
- ``native``: the engine's own sequence (PostgreSQL, MariaDB, Spanner) or an
  AUTOINCREMENT insert (SQLite, MySQL), taken inside the transaction: what a
  user would pick instead;
- ``pooled``: ``PooledSequence(name, batch_size=--batch-size)``, taken inside the
  transaction on its connection after the transaction's statement (one ``nextval`` per block of
  ``--batch-size`` keys; the sequences table where the engine has no
  incrementing sequence: SQLite, MySQL, Spanner).

It prints what the guide's tool prints::

    $ python -m benchmarks sequences --url postgresql+psycopg://postgres@127.0.0.1/test --mode sync
    2000 iterations (10 parallel threads) in 22718 milliseconds: 88.035962 values/s
    Latency: 50%ile 108 ms
    ...

``--grid`` runs the guide's eight rows (four modes at 10 and 50 threads)
beside the ceiling and the native sequence, with the guide's published
numbers (Spanner, 2000 iterations, 10 ms transactions) alongside.

On a PostgreSQL or MySQL/MariaDB server the run creates a database of its own
(``seqkeys_bench_<random>``) and drops it at the end. ``--baseline DIR`` also
runs the grid with the library of another checkout (``git worktree add DIR
COMMIT``), in interleaved rounds on the same database, and prints each row's
values/s and p99 as a ratio new / baseline::

    $ python -m benchmarks sequences --url postgresql+psycopg://postgres@127.0.0.1/postgres \
        --grid --grid-threads 50 --grid-modes none,batch,async_batch --repeat 3 \
        --baseline /tmp/old
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import sqlalchemy as sa

from benchmarks._engines import Target, configure_for_spanner, masked
from benchmarks._table import Table, format_markdown, format_table, ratio, write_plot
from sqlalchemy_seqkeys import (
    PooledSequence,
    TableSequence,
    create_table_sequence,
    sequences_table,
)

__all__ = [
    "ALL_MODES",
    "HEADING",
    "HELP",
    "MODES",
    "PUBLISHED",
    "GridReport",
    "Names",
    "RunResult",
    "add_arguments",
    "bench_engine",
    "drop_objects",
    "grid_table",
    "main",
    "measure_grid",
    "run_mode",
]

HELP = "the perf tool of Spanner's sequence-generation guide: values/s and latency per mode"
HEADING = "## 1. Table-backed sequences: the table of Spanner's sequence-generation guide"

T = TypeVar("T")

#: bench mode -> TableSequence mode (None: not a table sequence)
MODES: dict[str, str | None] = {
    "sync": "in_transaction",
    "async": "separate",
    "batch": "batch",
    "async_batch": "async_batch",
    "none": None,
    "native": None,
    "pooled": None,
}

#: The guide's measurements on Spanner: (mode, threads) -> (values/s, p50, p90, p99 ms)
PUBLISHED: dict[tuple[str, int], tuple[float, int, int, int]] = {
    ("sync", 10): (34.0, 27, 1189, 2703),
    ("sync", 50): (30.6, 1191, 3513, 5982),
    ("async", 10): (66.5, 28, 611, 1460),
    ("async", 50): (78.1, 29, 1695, 3442),
    ("batch", 10): (494.0, 18, 20, 38),
    ("batch", 50): (1195.0, 27, 55, 168),
    ("async_batch", 10): (512.0, 18, 20, 30),
    ("async_batch", 50): (1622.0, 24, 28, 30),
}

#: Every mode, in the order the tables list them.
ALL_MODES = ("none", "native", "sync", "async", "batch", "async_batch", "pooled")

SEQUENCE_NAME = "seqkeys_bench"
NATIVE_NAME = "seqkeys_bench_native"
POOLED_NAME = "seqkeys_bench_pooled"


@dataclass(frozen=True)
class Names:
    """What a run creates: the table sequence's row, its table, the native sequence or table.

    Example::

        >>> Names.prefixed("seqkeys_report")
        Names(sequence='seqkeys_report', table='seqkeys_report_sequences',
              native='seqkeys_report_native', pooled='seqkeys_report_pooled')
    """

    sequence: str = SEQUENCE_NAME
    table: str = "sequences"
    native: str = NATIVE_NAME
    pooled: str = POOLED_NAME

    @classmethod
    def prefixed(cls, prefix: str) -> Names:
        """Names of their own, apart from the ``sequences`` benchmark and the test suite."""
        return cls(prefix, f"{prefix}_sequences", f"{prefix}_native", f"{prefix}_pooled")


@dataclass
class RunResult:
    """One run: how many values, how long, and each iteration's latency in ms."""

    mode: str
    threads: int
    iterations: int
    seconds: float
    latencies_ms: list[float]
    #: the value each iteration took (None for ``none``), in no particular order
    values: list[object] = field(default_factory=list, repr=False)

    @property
    def rate(self) -> float:
        """Values per second over the whole run."""
        return self.iterations / self.seconds

    def percentile(self, p: float) -> float:
        """The ``p``-th percentile latency (nearest rank), in ms."""
        ordered = sorted(self.latencies_ms)
        rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
        return ordered[rank - 1]

    def tool_lines(self) -> str:
        """The lines the guide's perf tool prints."""
        lines = [
            f"{self.iterations} iterations ({self.threads} parallel threads) in "
            f"{self.seconds * 1000:.0f} milliseconds: {self.rate:f} values/s"
        ]
        lines += [f"Latency: {p}%ile {self.percentile(p):.0f} ms" for p in (50, 75, 90, 99)]
        return "\n".join(lines)


def _prepare(
    engine: sa.Engine, mode: str, batch_size: int, low_watermark: int, names: Names
) -> Callable[[sa.Connection], object]:
    """Create what ``mode`` needs; return the function that takes a value in a transaction."""
    if mode == "none":
        return lambda conn: None
    if mode == "native":
        return _prepare_native(engine, names.native)
    if mode == "pooled":
        return _prepare_pooled(engine, batch_size, names)
    metadata = sa.MetaData()
    table = sequences_table(metadata, names.table)
    metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(sa.delete(table).where(table.c.name == names.sequence))
    create_table_sequence(engine, names.sequence, table=names.table)
    sequence = TableSequence(
        names.sequence,
        mode=str(MODES[mode]),
        batch_size=batch_size,
        low_watermark=low_watermark,
        table=names.table,
    )
    return sequence.next_value


def _pooled(batch_size: int, names: Names) -> PooledSequence:
    try:
        return PooledSequence(names.pooled, batch_size=batch_size, table=names.table)
    except TypeError:  # a library before 0.3 (a --baseline checkout): the factory
        from sqlalchemy_seqkeys import pooled_sequence

        return pooled_sequence(names.pooled, batch_size, table=names.table)


def _prepare_pooled(
    engine: sa.Engine, batch_size: int, names: Names
) -> Callable[[sa.Connection], object]:
    """A fresh pooled sequence of blocks of ``batch_size``; takes a key on the caller's connection.

    As its column default does in a flush: the ``nextval`` for a new block runs
    on the application transaction's connection (the sequences table, in a
    short transaction of its own, where the engine has no such sequence).
    """
    sequence = _pooled(batch_size, names)
    sequences_table(sa.MetaData(), names.table).create(engine, checkfirst=True)
    sequence.drop(engine, checkfirst=True)
    sequence.create(engine)
    return sequence.next_value


def drop_objects(engine: sa.Engine, names: Names) -> None:
    """Drop what runs with ``names`` created: the sequences table, the native sequence or table.

    Example::

        drop_objects(engine, Names.prefixed("seqkeys_report"))
    """
    metadata = sa.MetaData()
    sequences_table(metadata, names.table)
    sa.Table(names.native, metadata, sa.Column("id", sa.Integer, primary_key=True))
    metadata.drop_all(engine)
    with engine.connect() as conn:
        supports_sequences = conn.dialect.supports_sequences
    if supports_sequences:
        sa.Sequence(names.native).drop(engine, checkfirst=True)
        sa.Sequence(names.pooled).drop(engine, checkfirst=True)


def _prepare_native(engine: sa.Engine, native: str) -> Callable[[sa.Connection], object]:
    metadata = sa.MetaData()
    table = sa.Table(
        native,
        metadata,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sqlite_autoincrement=True,
    )
    with engine.connect() as conn:  # the dialect knows what the server supports once connected
        supports_sequences = conn.dialect.supports_sequences
        if sa.inspect(conn).has_table(native):
            metadata.drop_all(conn)
            conn.commit()
    if supports_sequences:
        # (sqlalchemy-spanner creates bit_reversed_positive sequences)
        sequence = sa.Sequence(native)
        sequence.drop(engine, checkfirst=True)
        sequence.create(engine)
        next_value = sequence.next_value()
        return lambda conn: conn.scalar(sa.select(next_value))
    # no sequences (SQLite, MySQL): an AUTOINCREMENT insert
    metadata.create_all(engine)
    insert = table.insert().values()

    def take(conn: sa.Connection) -> object:
        key = conn.execute(insert).inserted_primary_key
        return None if key is None else key[0]

    return take


_TRANSIENT = ("aborted", "database is locked", "deadlock", "lock wait timeout", "serializ")


def _retrying(transaction: Callable[[], T], attempts: int = 100) -> T:
    """Run ``transaction`` again when the engine aborted it, as an application would.

    Spanner aborts concurrent read-write transactions (the emulator all but
    one), SQLite's busy timeout can run out, servers pick deadlock victims.
    """
    for attempt in range(1, attempts + 1):
        try:
            return transaction()
        except sa.exc.DBAPIError as exc:
            text = f"{type(exc.orig).__name__} {exc.orig}".lower()
            if attempt == attempts or not any(word in text for word in _TRANSIENT):
                raise
            time.sleep(random.uniform(0, min(0.05, 0.005 * 2**attempt)))
    raise AssertionError("unreachable")


def run_mode(
    engine: sa.Engine,
    mode: str,
    *,
    iterations: int = 2000,
    threads: int = 10,
    txn_ms: float = 10,
    batch_size: int = 200,
    low_watermark: int = 50,
    names: Names = Names(),
) -> RunResult:
    """Run ``iterations`` iterations of ``mode`` on ``threads`` threads."""
    take = _prepare(engine, mode, batch_size, low_watermark, names)
    in_transaction = mode in ("sync", "native", "pooled")
    # A pooled key comes from memory but for one nextval per block: the
    # transaction still runs the application's statement, as the ceiling's does.
    with_statement = not in_transaction or mode == "pooled"
    pause = txn_ms / 1000
    latencies: list[float] = []
    values: list[object] = []
    errors: list[BaseException] = []
    counter = iter(range(iterations))
    counter_lock = threading.Lock()
    barrier = threading.Barrier(threads + 1)

    def app_transaction() -> object:
        value: object = None
        with engine.begin() as conn:
            if with_statement:
                conn.execute(sa.text("SELECT 1"))
            if in_transaction:
                value = take(conn)
            time.sleep(pause)  # the application's work, inside its transaction
        return value

    def worker() -> None:
        mine: list[float] = []
        taken: list[object] = []
        try:
            barrier.wait()
            while True:
                with counter_lock:
                    if next(counter, None) is None:
                        break
                started = time.perf_counter()
                value = None if in_transaction else take(engine)  # type: ignore[arg-type]
                # An application retries a transaction the engine aborted
                # (Spanner's emulator aborts all but one at a time).
                in_txn = _retrying(app_transaction)
                mine.append((time.perf_counter() - started) * 1000)
                taken.append(in_txn if in_transaction else value)
        except BaseException as exc:  # reported after the run
            errors.append(exc)
        finally:
            with counter_lock:
                latencies.extend(mine)
                values.extend(taken)

    pool = [threading.Thread(target=worker, name=f"bench-{i}") for i in range(threads)]
    for t in pool:
        t.start()
    barrier.wait()
    started = time.perf_counter()
    for t in pool:
        t.join()
    seconds = time.perf_counter() - started
    _wait_for_refills()
    if errors:
        raise errors[0]
    return RunResult(mode, threads, len(latencies), seconds, latencies, values)


def _wait_for_refills(timeout: float = 60) -> None:
    """Let an async_batch refill under way finish before the caller disposes of the engine.

    (A connection checked out through a dispose is left to the garbage
    collector, unclosed.) Refills run in long-lived threads from version 0.2
    on, in a thread per refill before (a ``--baseline`` checkout).
    """
    try:
        from sqlalchemy_seqkeys.sequences._allocator import refills
    except ImportError:  # an older library: one thread per refill
        for t in threading.enumerate():
            if t.name.startswith("seqkeys-refill-"):
                t.join(timeout=timeout)
        return
    refills.wait_idle(timeout)


@contextlib.contextmanager
def own_database(url: str) -> Iterator[str]:
    """A database of the run's own on a PostgreSQL or MySQL server, dropped at the end.

    Other URLs (SQLite, Spanner) are used as they are.

    Example::

        with own_database("postgresql+psycopg://postgres@127.0.0.1/postgres") as url:
            measure_grid(url)
    """
    parsed = sa.make_url(url)
    backend = parsed.get_backend_name()
    if backend not in ("postgresql", "mysql", "mariadb"):
        yield url
        return
    name = f"seqkeys_bench_{secrets.token_hex(4)}"
    server = sa.create_engine(parsed, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    try:
        with server.connect() as conn:
            conn.execute(sa.text(f"CREATE DATABASE {name}"))
        try:
            yield parsed.set(database=name).render_as_string(hide_password=False)
        finally:
            force = " WITH (FORCE)" if backend == "postgresql" else ""
            with server.connect() as conn:
                conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name}{force}"))
    finally:
        server.dispose()


def bench_engine(url: str, threads: int) -> sa.Engine:
    """An engine whose pool serves ``threads`` threads plus their separate allocations."""
    engine = sa.create_engine(url, pool_size=threads + 2, max_overflow=threads + 2)
    return configure_for_spanner(engine)


def measure_grid(
    url: str,
    *,
    iterations: int = 2000,
    txn_ms: float = 10,
    thread_counts: Sequence[int] = (10, 50),
    modes: Sequence[str] = ALL_MODES,
    progress: Callable[[str], None] | None = None,
    repeat: int = 1,
    names: Names = Names(),
) -> dict[tuple[str, int], RunResult]:
    """Run every mode at every thread count on ``url``; the median run of each, by values/s.

    With ``repeat`` > 1 every mode runs that many times, in interleaved rounds,
    and the run with the median values/s is kept: at 50 threads a 2-core
    machine is CPU-bound and single runs vary by 10-20%.

    Example::

        results = measure_grid("sqlite:///bench.db", iterations=200, thread_counts=[4])
        results["batch", 4].rate / results["none", 4].rate   # 1.0 is the ceiling
    """
    runs: dict[tuple[str, int], list[RunResult]] = {}
    for threads in thread_counts:
        engine = bench_engine(url, threads)
        try:
            # Warm up: open the pool's connections before anything is timed.
            run_mode(engine, "none", iterations=threads * 4, threads=threads, txn_ms=txn_ms)
            for round_no in range(1, repeat + 1):
                for mode in modes:
                    if progress is not None:
                        progress(f"round {round_no}: {mode} x {threads} threads ...")
                    result = run_mode(
                        engine,
                        mode,
                        iterations=iterations,
                        threads=threads,
                        txn_ms=txn_ms,
                        names=names,
                    )
                    runs.setdefault((mode, threads), []).append(result)
        finally:
            engine.dispose()
    return {
        key: sorted(found, key=lambda r: r.rate)[len(found) // 2] for key, found in runs.items()
    }


def grid_table(results: dict[tuple[str, int], RunResult], *, code: bool = False) -> Table:
    """The grid: each row beside its ceiling (``none``) and the guide's published row.

    ``code=True`` sets the modes in Markdown code spans.

    Example::

        print(format_table(grid_table(measure_grid(url))))
    """
    table = Table(
        [
            "mode",
            "threads",
            "values/s",
            "vs ceiling",
            "p50 / p90 / p99 ms",
            "latency vs ceiling",
            "guide values/s",
            "vs guide",
            "guide p50 / p90 / p99 ms",
        ]
    )
    percentiles = (50, 90, 99)
    for (mode, threads), r in results.items():
        ceiling = results.get(("none", threads))
        published = PUBLISHED.get((mode, threads))
        latency = [r.percentile(p) for p in percentiles]
        table.add(
            f"`{mode}`" if code else mode,
            threads,
            f"{r.rate:,.1f}",
            ratio(r.rate, ceiling.rate if ceiling else None),
            " / ".join(f"{v:,.0f}" for v in latency),
            " / ".join(
                ratio(v, ceiling.percentile(p) if ceiling else None)
                for v, p in zip(latency, percentiles, strict=True)
            ),
            f"{published[0]:,.1f}" if published else "-",
            ratio(r.rate, published[0] if published else None),
            " / ".join(f"{v:,}" for v in published[1:]) if published else "-",
        )
    return table


_INTRO = """\
The perf tool of Spanner's sequence-generation guide, run on each engine:
{threads} threads share {iterations} iterations; each takes one value and uses
it in a simulated application transaction of 10 ms on the same engine. `sync`
is `TableSequence` `in_transaction`, `async` is `separate`, `batch` and
`async_batch` take blocks of 200 (low watermark 50). Beside them, `none` runs
the same transaction without a key, the **ceiling** every ratio is taken
against, and `native` takes the engine's own sequence inside the transaction
(an AUTOINCREMENT insert on SQLite and MySQL, a `bit_reversed_positive`
sequence on Spanner); `pooled` is `PooledSequence(name, batch_size=200)`, taken inside
the transaction after its statement (one `nextval` per 200 keys; the sequences
table on SQLite, MySQL and Spanner, whose sequences do not increment by a
block). The guide's numbers were measured on Spanner from a
4-vCPU client VM; `vs guide` is values/s here divided by values/s there.
`latency vs ceiling` gives each percentile divided by the same percentile of
`none`.
"""


@dataclass
class GridReport:
    """The report's part: the grid on each engine, its tables, plot and findings.

    Example::

        part = GridReport(targets, iterations=2000, spanner_iterations=500)
        part.measure(targets[0])
        print("\\n".join(part.markdown(plot=None)))
    """

    targets: list[Target]
    iterations: int
    spanner_iterations: int
    thread_counts: tuple[int, ...] = (10, 50)
    repeat: int = 1
    grids: dict[str, dict[tuple[str, int], RunResult]] = field(default_factory=dict)
    plot_name = "sequences"

    @property
    def measured(self) -> bool:
        """Whether there is anything to show."""
        return bool(self.grids)

    def measure(
        self,
        target: Target,
        *,
        progress: Callable[[str], None] | None = None,
        prefix: str = "seqkeys_report",
    ) -> None:
        """Run the grid on ``target`` with objects named ``prefix...``; drop them after."""
        names = Names.prefixed(prefix)
        try:
            self.grids[target.key] = measure_grid(
                target.url,
                iterations=self.spanner_iterations if target.key == "spanner" else self.iterations,
                thread_counts=self.thread_counts,
                progress=progress,
                repeat=self.repeat,
                names=names,
            )
        finally:
            engine = sa.create_engine(target.url)
            try:
                drop_objects(engine, names)
            finally:
                engine.dispose()

    def markdown(self, plot: str | None) -> list[str]:
        """The section: how, one table per engine, the plot."""
        threads = " and ".join(map(str, self.thread_counts))
        lines = [HEADING, "", _INTRO.format(threads=threads, iterations=f"{self.iterations:,}")]
        if self.repeat > 1:
            lines.append(f"Each row is the median of {self.repeat} interleaved runs.\n")
        for target in self.targets:
            lines.append(f"### {target.server}\n")
            grid = self.grids.get(target.key)
            if grid is None:
                lines.append("Not measured: see the notes.\n")
                continue
            if target.key == "spanner":
                lines.append(
                    f"{self.spanner_iterations:,} iterations per row. The emulator runs "
                    "one read-write transaction at a time and aborts the others (they retry), "
                    "so every mode that writes in parallel queues behind it: these numbers show "
                    "the emulator, not Spanner.\n"
                )
            if target.key == "sqlite":
                lines.append(
                    "SQLite has one writer: `sync` and `native` hold the write lock through the "
                    "10 ms transaction, so they run one at a time.\n"
                )
            lines += [format_markdown(grid_table(grid, code=True)), ""]
        if plot:
            lines.append(
                f"![values/s per mode and engine, beside the ceiling and the guide]({plot})\n"
            )
        return lines

    def findings(self) -> list[str]:
        """What reproduced the guide's numbers, what did not, and why."""
        bullets = []
        sync_rates = [
            r.rate
            for key, grid in self.grids.items()
            if key != "spanner"
            for (mode, _), r in grid.items()
            if mode == "sync"
        ]
        if sync_rates:
            bullets.append(
                f"`sync` took {min(sync_rates):,.1f} to {max(sync_rates):,.1f} values/s on every "
                "server engine and thread count (Spanner's sequence-generation guide: 34 and "
                "30.6): one row lock held through each 10 ms application transaction caps it "
                "near 1 / (transaction latency), however many threads wait. That is the guide's "
                "point, reproduced."
            )
        for target in self.targets:
            grid = self.grids.get(target.key)
            if grid:
                bullets.append(_against_the_guide(target, grid))
        return bullets

    def plot(self, path: Path) -> None:
        """Bars of values/s per mode, here and in the guide, per engine and thread count."""
        from matplotlib.figure import Figure

        targets = [t for t in self.targets if t.key in self.grids]
        threads = self.thread_counts
        fig = Figure(figsize=(5.2 * len(threads), 3.2 * len(targets) + 0.6), layout="constrained")
        axes = fig.subplots(len(targets), len(threads), squeeze=False)
        modes = list(ALL_MODES)
        for row, target in enumerate(targets):
            grid = self.grids[target.key]
            for col, count in enumerate(threads):
                ax = axes[row][col]
                here = [grid[m, count].rate if (m, count) in grid else 0.0 for m in modes]
                guide = [PUBLISHED.get((m, count), (0.0,))[0] for m in modes]
                xs = list(range(len(modes)))
                ax.bar([x - 0.2 for x in xs], here, width=0.4, label="here", color="tab:blue")
                ax.bar(
                    [x + 0.2 for x in xs],
                    guide,
                    width=0.4,
                    label="guide (Spanner)",
                    color="tab:gray",
                )
                ceiling = grid.get(("none", count))
                for x, value in zip(xs, here, strict=True):
                    if ceiling and value:
                        ax.annotate(
                            f"{value / ceiling.rate:.2f}x",
                            (x - 0.2, value),
                            ha="center",
                            va="bottom",
                            fontsize=7,
                        )
                ax.set_yscale("log")
                ax.set_xticks(xs, modes, fontsize=7, rotation=20)
                ax.set_ylabel("values/s (log)", fontsize=8)
                ax.set_title(f"{target.label}, {count} threads (labels: vs ceiling)", fontsize=9)
                ax.legend(fontsize=7, loc="lower right")
        fig.suptitle("Sequences: values/s, 10 ms app transactions", fontsize=10)
        fig.savefig(path, dpi=80)


def _against_the_guide(target: Target, grid: dict[tuple[str, int], RunResult]) -> str:
    """How many of the guide's rows ``target`` reached, and why it missed the others."""
    rows = [(key, r) for key, r in grid.items() if key in PUBLISHED]
    below = [(key, r) for key, r in rows if r.rate < PUBLISHED[key][0]]
    text = f"{target.label}: {len(rows) - len(below)} of the guide's {len(rows)} rows "
    text += "reached or beaten."
    if target.key == "spanner" and below:
        return text + (
            " The emulator runs one read-write transaction at a time and aborts the "
            "others, so every mode queues behind it: "
            + ", ".join(
                f"`{mode}` x {threads} {r.rate:,.1f} (guide {PUBLISHED[mode, threads][0]:,.1f})"
                for (mode, threads), r in below
            )
            + "."
        )
    reasons = []
    for (mode, threads), r in below:
        published = PUBLISHED[mode, threads][0]
        ceiling = grid.get(("none", threads))
        if ceiling is not None and ceiling.rate < published:
            why = (
                f"this machine's ceiling, the same transaction without a key, is "
                f"{ceiling.rate:,.0f} values/s, itself below the guide's number; the mode "
                f"ran at {r.rate / ceiling.rate:.2f}x of it"
            )
        else:
            why = "see the table"
        reasons.append(
            f"`{mode}` at {threads} threads {r.rate:,.1f} against {published:,.1f} ({why})"
        )
    if reasons:
        text += " Below: " + "; ".join(reasons) + "."
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``python -m benchmarks sequences``."""
    parser.add_argument("--url", required=True, help="database URL")
    parser.add_argument(
        "--mode",
        default="async_batch",
        choices=list(MODES),
        help="sync=in_transaction, async=separate; none is the ceiling",
    )
    parser.add_argument("--iterations", type=int, default=2000, help="values taken in all")
    parser.add_argument("--threads", type=int, default=10, help="parallel threads")
    parser.add_argument(
        "--txn-ms", type=float, default=10, help="length of the simulated application transaction"
    )
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--low-watermark", type=int, default=50)
    grid = parser.add_argument_group("the grid")
    grid.add_argument(
        "--grid",
        action="store_true",
        help="the guide's eight rows at 10 and 50 threads, beside the ceiling, "
        "the native sequence and the published numbers",
    )
    grid.add_argument(
        "--repeat", type=int, default=1, help="runs per mode, interleaved; the median counts"
    )
    grid.add_argument(
        "--grid-threads",
        default="10,50",
        help="comma-separated thread counts (default: %(default)s)",
    )
    grid.add_argument(
        "--grid-modes", default=",".join(ALL_MODES), help="comma-separated modes (default: all)"
    )
    grid.add_argument("--plot", metavar="FILE", help="also draw values/s per mode (PNG)")
    grid.add_argument(
        "--baseline",
        metavar="DIR",
        help="a checkout of another commit (git worktree add DIR COMMIT): run the grid with "
        "its library too, in interleaved rounds (--repeat), and print new / baseline",
    )
    grid.add_argument("--json", metavar="FILE", help="also write the grid's medians as JSON")
    parser.add_argument(
        "--in-database",
        action="store_true",
        help="use the URL's database as it is (default: a database of the run's own "
        "on PostgreSQL and MySQL, dropped at the end)",
    )


def _summary(results: dict[tuple[str, int], RunResult]) -> dict[str, dict[str, float]]:
    return {
        f"{mode},{threads}": {"rate": r.rate, **{f"p{p}": r.percentile(p) for p in (50, 90, 99)}}
        for (mode, threads), r in results.items()
    }


def _grid(args: argparse.Namespace, url: str) -> int:
    results = measure_grid(
        url,
        iterations=args.iterations,
        txn_ms=args.txn_ms,
        progress=lambda line: print(f"  {line}", flush=True),
        repeat=args.repeat,
        thread_counts=[int(t) for t in args.grid_threads.split(",")],
        modes=[m.strip() for m in args.grid_modes.split(",")],
    )
    rounds = f", median of {args.repeat} interleaved runs" if args.repeat > 1 else ""
    print(
        f"sequence benchmark on {masked(args.url)}: {args.iterations} iterations per row, "
        f"{args.txn_ms:g} ms application transactions{rounds}"
    )
    print(format_table(grid_table(results)))
    if args.json:
        Path(args.json).write_text(json.dumps(_summary(results), indent=1))
    if args.plot:
        target = Target("cli", masked(args.url), args.url, masked(args.url))
        threads = tuple(int(t) for t in args.grid_threads.split(","))
        part = GridReport([target], args.iterations, args.iterations, threads, args.repeat)
        part.grids["cli"] = results
        return write_plot(part.plot, args.plot)
    return 0


def _rounds(
    args: argparse.Namespace, url: str, here: Path, shim: Path
) -> dict[str, dict[str, list[dict[str, float]]]]:
    """The grid's rows per side (this checkout, the baseline), from alternating rounds."""
    # the same harness, the baseline's library: a directory with both, run as cwd
    (shim / "sqlalchemy_seqkeys").symlink_to(Path(args.baseline).resolve() / "sqlalchemy_seqkeys")
    (shim / "benchmarks").symlink_to(here / "benchmarks")
    sides = {"new": here, "baseline": shim}
    found: dict[str, dict[str, list[dict[str, float]]]] = {side: {} for side in sides}
    for round_no in range(args.repeat):
        order = list(sides) if round_no % 2 == 0 else list(sides)[::-1]
        for side in order:
            out = shim / f"{side}-{round_no}.json"
            command = [sys.executable, "-m", "benchmarks.sequences", "--url", url]
            command += ["--in-database", "--grid", "--repeat", "1", "--json", str(out)]
            command += ["--iterations", str(args.iterations), "--txn-ms", str(args.txn_ms)]
            command += ["--grid-threads", args.grid_threads, "--grid-modes", args.grid_modes]
            print(f"round {round_no + 1}: {side}", flush=True)
            env = {**os.environ, "PYTHONPATH": str(sides[side])}
            subprocess.run(command, cwd=sides[side], env=env, check=True)
            rows = json.loads(out.read_text())
            for key, row in rows.items():
                # against the ceiling of the same run: the machine's load moves both
                ceiling = rows.get(f"none,{key.split(',')[1]}")
                if ceiling:
                    row["vs_ceiling"] = row["rate"] / ceiling["rate"]
                    row["p99_vs_ceiling"] = row["p99"] / ceiling["p99"]
                found[side].setdefault(key, []).append(row)
    return found


def _against_baseline(args: argparse.Namespace, url: str) -> int:
    """Run the grid with this checkout's library and the baseline's, in alternating rounds."""
    here = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="seqkeys_baseline_") as tmp:
        found = _rounds(args, url, here, Path(tmp))
    median = {
        side: {k: sorted(v, key=lambda r: r["rate"])[len(v) // 2] for k, v in rows.items()}
        for side, rows in found.items()
    }
    # each run's ratio to its own ceiling, then the median over the rounds
    paired = {
        side: {
            k: {
                name: statistics.median(r[name] for r in v)
                for name in ("vs_ceiling", "p99_vs_ceiling")
            }
            for k, v in rows.items()
            if all("vs_ceiling" in r for r in v)
        }
        for side, rows in found.items()
    }
    table = Table(
        [
            "mode",
            "threads",
            "values/s new",
            "values/s baseline",
            "new / baseline",
            "new vs ceiling",
            "baseline vs ceiling",
            "p99 new vs ceiling",
            "p99 baseline vs ceiling",
        ]
    )
    for key, new in median["new"].items():
        mode, threads = key.split(",")
        old = median["baseline"].get(key)
        new_paired = paired["new"].get(key, {})
        old_paired = paired["baseline"].get(key, {})
        table.add(
            mode,
            threads,
            f"{new['rate']:,.1f}",
            f"{old['rate']:,.1f}" if old else "-",
            ratio(new["rate"], old["rate"] if old else None),
            *(
                f"{ratios[name]:.2f}x" if name in ratios else "-"
                for ratios, name in (
                    (new_paired, "vs_ceiling"),
                    (old_paired, "vs_ceiling"),
                    (new_paired, "p99_vs_ceiling"),
                    (old_paired, "p99_vs_ceiling"),
                )
            ),
        )
    print(
        f"this checkout against {args.baseline}: medians of {args.repeat} alternating rounds, "
        f"{args.iterations} iterations per row; 'vs ceiling': each run against the ceiling "
        "of the same run"
    )
    print(format_table(table))
    if args.json:
        Path(args.json).write_text(json.dumps(median, indent=1))
    return 0


def main(args: argparse.Namespace) -> int:
    """One mode (the guide tool's lines) or, with ``--grid``, the table."""
    if args.in_database:
        return _main(args, args.url)
    with own_database(args.url) as url:
        return _main(args, url)


def _main(args: argparse.Namespace, url: str) -> int:
    if args.grid and args.baseline:
        return _against_baseline(args, url)
    if args.grid:
        return _grid(args, url)
    engine = bench_engine(url, args.threads)
    try:
        result = run_mode(
            engine,
            args.mode,
            iterations=args.iterations,
            threads=args.threads,
            txn_ms=args.txn_ms,
            batch_size=args.batch_size,
            low_watermark=args.low_watermark,
        )
    finally:
        engine.dispose()
    print(result.tool_lines())
    return 0


if __name__ == "__main__":  # the --baseline runs: this module alone, not every benchmark
    _parser = argparse.ArgumentParser(prog="python -m benchmarks.sequences", description=HELP)
    add_arguments(_parser)
    sys.exit(main(_parser.parse_args()))
