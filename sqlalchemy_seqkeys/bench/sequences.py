"""``seqkeys bench sequences``: the source's sequence performance tool, on any engine.

Each iteration takes one value and uses it in a simulated application
transaction of ``--txn-ms`` milliseconds on the same engine (a statement, then
a sleep, then COMMIT); ``--threads`` threads share ``--iterations``
iterations. Modes, named as in the source:

- ``sync``: ``TableSequence`` ``in_transaction`` (the value is taken inside
  the application transaction, whose row lock it then holds);
- ``async``: ``separate`` (a short transaction of its own, then the
  application transaction);
- ``batch`` and ``async_batch``: blocks of ``--batch-size`` values
  (``--low-watermark`` for the background refill);
- ``none``: the same transaction with no key at all: the ceiling;
- ``native``: the engine's own sequence (PostgreSQL, MariaDB, Spanner) or an
  AUTOINCREMENT insert (SQLite, MySQL), taken inside the transaction: what a
  user would pick instead.

It prints what the source's tool prints::

    $ seqkeys bench sequences --url postgresql+psycopg://postgres@127.0.0.1/test --mode sync
    2000 iterations (10 parallel threads) in 22718 milliseconds: 88.035962 values/s
    Latency: 50%ile 108 ms
    ...

``--grid`` runs the source's eight rows (four modes at 10 and 50 threads)
beside the ceiling and the native sequence, with the source's published
numbers (Spanner, 2000 iterations, 10 ms transactions) alongside.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from sqlalchemy_seqkeys._dialect import dialect_key
from sqlalchemy_seqkeys.bench._table import Table, format_table
from sqlalchemy_seqkeys.sequences._retry import retrying
from sqlalchemy_seqkeys.sequences.generators import TableSequence
from sqlalchemy_seqkeys.sequences.table import (
    DEFAULT_TABLE,
    create_table_sequence,
    sequences_table,
)

__all__ = [
    "MODES",
    "PUBLISHED",
    "Names",
    "RunResult",
    "grid",
    "grid_table",
    "measure_grid",
    "run_mode",
]

#: bench mode -> TableSequence mode (None: not a table sequence)
MODES: dict[str, str | None] = {
    "sync": "in_transaction",
    "async": "separate",
    "batch": "batch",
    "async_batch": "async_batch",
    "none": None,
    "native": None,
}

#: The source's measurements on Spanner: (mode, threads) -> (values/s, p50, p90, p99 ms)
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

SEQUENCE_NAME = "seqkeys_bench"
NATIVE_NAME = "seqkeys_bench_native"


@dataclass(frozen=True)
class Names:
    """What a run creates: the table sequence's row, its table, the native sequence or table.

    Example::

        >>> Names.prefixed("seqkeys_report")
        Names(sequence='seqkeys_report', table='seqkeys_report_sequences',
              native='seqkeys_report_native')
    """

    sequence: str = SEQUENCE_NAME
    table: str = DEFAULT_TABLE
    native: str = NATIVE_NAME

    @classmethod
    def prefixed(cls, prefix: str) -> Names:
        """Names of their own, apart from ``seqkeys bench sequences`` and the test suite."""
        return cls(prefix, f"{prefix}_sequences", f"{prefix}_native")


@dataclass
class RunResult:
    """One run: how many values, how long, and each iteration's latency in ms."""

    mode: str
    threads: int
    iterations: int
    seconds: float
    latencies_ms: list[float]

    @property
    def rate(self) -> float:
        """Values per second over the whole run."""
        return self.iterations / self.seconds

    def percentile(self, p: float) -> float:
        """The ``p``-th percentile latency (nearest rank), in ms."""
        ordered = sorted(self.latencies_ms)
        rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
        return ordered[rank - 1]

    def source_lines(self) -> str:
        """The lines the source's perf tool prints."""
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
    in_transaction = mode in ("sync", "native")
    pause = txn_ms / 1000
    latencies: list[float] = []
    errors: list[BaseException] = []
    counter = iter(range(iterations))
    counter_lock = threading.Lock()
    barrier = threading.Barrier(threads + 1)

    def app_transaction() -> None:
        with engine.begin() as conn:
            if in_transaction:
                take(conn)
            else:
                conn.execute(sa.text("SELECT 1"))
            time.sleep(pause)  # the application's work, inside its transaction

    def worker() -> None:
        mine: list[float] = []
        try:
            barrier.wait()
            while True:
                with counter_lock:
                    if next(counter, None) is None:
                        break
                started = time.perf_counter()
                if not in_transaction:
                    take(engine)  # type: ignore[arg-type]
                # An application retries a transaction the engine aborted
                # (Spanner's emulator aborts all but one at a time).
                retrying(
                    lambda: app_transaction(),
                    what="the application transaction",
                    attempts=100,
                    max_delay=0.05,
                )
                mine.append((time.perf_counter() - started) * 1000)
        except BaseException as exc:  # reported after the run
            errors.append(exc)
        finally:
            with counter_lock:
                latencies.extend(mine)

    pool = [threading.Thread(target=worker, name=f"bench-{i}") for i in range(threads)]
    for t in pool:
        t.start()
    barrier.wait()
    started = time.perf_counter()
    for t in pool:
        t.join()
    seconds = time.perf_counter() - started
    if errors:
        raise errors[0]
    return RunResult(mode, threads, len(latencies), seconds, latencies)


def bench_engine(url: str, threads: int) -> sa.Engine:
    """An engine whose pool serves ``threads`` threads plus their separate allocations."""
    engine = sa.create_engine(url, pool_size=threads + 2, max_overflow=threads + 2)
    if dialect_key(engine.dialect) == "spanner":
        engine.dialect.insertmanyvalues_max_parameters = 950
    return engine


def measure_grid(
    url: str,
    *,
    iterations: int = 2000,
    txn_ms: float = 10,
    thread_counts: Sequence[int] = (10, 50),
    modes: Sequence[str] = ("none", "native", "sync", "async", "batch", "async_batch"),
    progress: Callable[[str], None] | None = None,
    repeat: int = 1,
    names: Names = Names(),
) -> dict[tuple[str, int], RunResult]:
    """Run every mode at every thread count on ``url``; the median run of each, by values/s.

    With ``repeat`` > 1 every mode runs that many times, in interleaved rounds,
    and the run with the median values/s is kept.

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
                        progress(f"  round {round_no}: {mode} x {threads} threads ...")
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


def grid_table(results: dict[tuple[str, int], RunResult]) -> Table:
    """The grid as a :class:`Table`: each row beside its ceiling and the published numbers.

    Example::

        print(format_table(grid_table(measure_grid(url))))
    """
    table = Table(
        [
            "mode",
            "threads",
            "values/s",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "vs ceiling",
            "p99 vs ceiling",
            "source values/s",
            "source p50/p90/p99",
            "vs source",
        ]
    )
    for (mode, threads), r in results.items():
        ceiling = results.get(("none", threads))
        published = PUBLISHED.get((mode, threads))
        table.add(
            mode,
            threads,
            f"{r.rate:,.1f}",
            f"{r.percentile(50):.0f}",
            f"{r.percentile(90):.0f}",
            f"{r.percentile(99):.0f}",
            f"{r.rate / ceiling.rate:.2f}x" if ceiling else "-",
            f"{r.percentile(99) / ceiling.percentile(99):.2f}x" if ceiling else "-",
            f"{published[0]:,.1f}" if published else "-",
            "/".join(str(v) for v in published[1:]) if published else "-",
            f"{r.rate / published[0]:.1f}x" if published else "-",
        )
    return table


def grid(
    url: str,
    *,
    iterations: int = 2000,
    txn_ms: float = 10,
    thread_counts: Sequence[int] = (10, 50),
    modes: Sequence[str] = ("none", "native", "sync", "async", "batch", "async_batch"),
    progress: Callable[[str], None] | None = None,
    repeat: int = 1,
) -> str:
    """The source's table on ``url``, beside the ceiling, native sequence and published numbers.

    With ``repeat`` > 1 every mode runs that many times, in interleaved rounds,
    and the run with the median values/s is reported: at 50 threads a 2-core
    machine is CPU-bound and single runs vary by 10-20%.
    """
    results = measure_grid(
        url,
        iterations=iterations,
        txn_ms=txn_ms,
        thread_counts=thread_counts,
        modes=modes,
        progress=progress,
        repeat=repeat,
    )
    masked = sa.make_url(url).render_as_string(hide_password=True)
    rounds = f", median of {repeat} interleaved runs" if repeat > 1 else ""
    return (
        f"sequence benchmark on {masked}: {iterations} iterations per row, "
        f"{txn_ms:g} ms application transactions{rounds}\n{format_table(grid_table(results))}"
    )
