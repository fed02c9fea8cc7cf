"""``seqkeys bench report``: every benchmark on every engine, written up as ``BENCHMARKS.md``.

One command runs, on each engine it is given or finds running:

1. the source's sequence table (four ``TableSequence`` modes at 10 and 50
   threads, each value used in a 10 ms application transaction) beside the
   ceiling (the same transaction without a key), the engine's own sequence,
   and the source's published numbers (:mod:`sqlalchemy_seqkeys.bench.sequences`);
2. the insert table: BIGINT, ``uuid4``, COMB, UUIDv7, snowflake and
   bit-reversed keys, time and table-plus-index size relative to BIGINT
   (:mod:`sqlalchemy_seqkeys.bench.insert`);

and once, without a database:

3. the minting speed of every strategy beside ``uuid.uuid4`` (and
   ``uuid_utils`` when installed) (:mod:`sqlalchemy_seqkeys.bench.generate`);
4. the hotspot heatmaps of a range-partitioned store
   (:mod:`sqlalchemy_seqkeys.hotspots`).

It writes ``OUT/BENCHMARKS.md`` and PNG plots under ``OUT/docs/bench/``
(``--plots-dir``; linked relatively, so the report can live at a repository's
root). Every number is given as an absolute and as a ratio to its baseline of
the same run: shared machines are noisy, ratios less so::

    $ seqkeys bench report --out .            # the full run: tens of minutes
    $ seqkeys bench report --quick --out /tmp/report   # a smoke run: about a minute

Engines: a temporary SQLite file always; PostgreSQL and MariaDB/MySQL at the
URLs given (``--postgresql URL``, ``--mysql URL``) or, by default, the local
servers when they answer; the Spanner emulator with ``--spanner URL``,
``--spanner start`` (starts ``emulator_main``), or when
``SPANNER_EMULATOR_HOST`` is set (not with ``--quick``). ``none`` skips one.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO

import sqlalchemy as sa

from sqlalchemy_seqkeys import hotspots
from sqlalchemy_seqkeys._dialect import dialect_key
from sqlalchemy_seqkeys.bench import generate, insert, sequences
from sqlalchemy_seqkeys.bench._table import Table, format_markdown, ratio

__all__ = [
    "DEFAULT_URLS",
    "FULL",
    "QUICK",
    "SECTIONS",
    "Progress",
    "Sizes",
    "Target",
    "find_targets",
    "run_report",
    "sizes_for",
]

#: The local servers ``seqkeys bench report`` uses when they answer.
DEFAULT_URLS = {
    "postgresql": "postgresql+psycopg://postgres@127.0.0.1:5432/test",
    "mysql": "mysql+pymysql://root@127.0.0.1:3306/test",
}

#: The report's section headings, in order (a test checks them).
SECTIONS = (
    "## Machine",
    "## 1. Table-backed sequences: the source's table on each engine",
    "## 2. Inserts: time and size relative to BIGINT",
    "## 3. Key generation speed",
    "## 4. Hotspots: where writes land in a range-partitioned store",
    "## Against the source",
    "## Notes",
)

#: Tables and sequences the report creates have names of their own, so that a
#: test suite using the same database at the same time does not meet them.
PREFIX = "seqkeys_report"


@dataclass(frozen=True)
class Sizes:
    """How much each part of the report runs.

    Example::

        >>> replace(QUICK, insert_rows=2_000).insert_rows
        2000
    """

    #: rows per insert variant (SQLite, PostgreSQL, MariaDB/MySQL)
    insert_rows: int
    #: rows per insert variant on the Spanner emulator
    spanner_insert_rows: int
    #: iterations per row of the sequence table
    iterations: int
    #: the same on the Spanner emulator
    spanner_iterations: int
    #: thread counts of the sequence table (the source's: 10 and 50)
    thread_counts: tuple[int, ...]
    #: interleaved runs per sequence mode (the median counts)
    repeat: int
    #: seconds per timed round of the generation benchmark
    gen_seconds: float
    #: interleaved rounds of the generation benchmark (the best counts)
    gen_rounds: int
    #: writes per strategy of the hotspot model
    hotspot_writes: int
    #: a range splits when it holds more keys than this
    hotspot_split_keys: int
    #: writes per time window of the hotspot model
    hotspot_window: int
    #: seconds to wait after each insert variant (the server's background work)
    settle: float
    #: interleaved rounds of the insert variants (each keeps its fastest)
    insert_repeat: int = 1


#: The full run: a million rows per insert variant (best of two rounds), the source's
#: 2,000 iterations.
FULL = Sizes(
    insert_rows=1_000_000,
    spanner_insert_rows=20_000,
    iterations=2000,
    spanner_iterations=500,
    thread_counts=(10, 50),
    repeat=1,
    gen_seconds=0.3,
    gen_rounds=5,
    hotspot_writes=hotspots.DEFAULT_WRITES,
    hotspot_split_keys=hotspots.DEFAULT_SPLIT_KEYS,
    hotspot_window=hotspots.DEFAULT_WINDOW,
    settle=3.0,
    insert_repeat=2,
)

#: A smoke run of every part, in about a minute.
QUICK = Sizes(
    insert_rows=5_000,
    spanner_insert_rows=1_000,
    iterations=100,
    spanner_iterations=40,
    thread_counts=(10,),
    repeat=1,
    gen_seconds=0.03,
    gen_rounds=2,
    hotspot_writes=20_000,
    hotspot_split_keys=400,
    hotspot_window=1_000,
    settle=0.2,
)


@dataclass
class Target:
    """One engine the report runs on.

    Example::

        Target("postgresql", "PostgreSQL", "postgresql+psycopg://...", "PostgreSQL 15.20")
    """

    key: str
    label: str
    url: str
    server: str

    @property
    def masked_url(self) -> str:
        """The URL with its password hidden."""
        return sa.make_url(self.url).render_as_string(hide_password=True)


class Progress:
    """Progress lines on stderr: the step, the time so far and, for long steps, a bar.

    On a terminal the bar is redrawn in place; otherwise a line is printed
    every tenth of the way, so a log (``nohup``) shows how far a run got.

    Example::

        progress = Progress(steps=3)
        progress.stage("insert on PostgreSQL")
        progress.bar("uuid4", 500_000, 1_000_000)
    """

    def __init__(self, steps: int = 0, stream: TextIO | None = None) -> None:
        """``steps``: how many :meth:`stage` calls to expect (shown as ``[i/steps]``)."""
        self.steps = steps
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.started = time.perf_counter()
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last: dict[str, int] = {}
        self._drawn = 0.0

    def elapsed(self) -> str:
        """Time since the start, as ``M:SS``."""
        seconds = int(time.perf_counter() - self.started)
        return f"{seconds // 60}:{seconds % 60:02d}"

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def stage(self, text: str) -> None:
        """Start the next step."""
        self.done += 1
        of = f"/{self.steps}" if self.steps else ""
        self._print(f"[{self.elapsed()}] [{self.done}{of}] {text}")

    def note(self, text: str) -> None:
        """A line inside the current step."""
        self._print(f"[{self.elapsed()}]     {text}")

    def bar(self, label: str, done: int, total: int) -> None:
        """``done`` of ``total`` in the current step."""
        total = max(total, 1)
        tenth = done * 10 // total
        width = 20
        filled = done * width // total
        text = (
            f"[{self.elapsed()}]     {label} [{'#' * filled}{'-' * (width - filled)}] "
            f"{done * 100 // total:3d}% {done:,}/{total:,}"
        )
        if self._tty:
            now = time.perf_counter()
            if done >= total or now - self._drawn > 0.2:
                self._drawn = now
                end = "\n" if done >= total else ""
                print(f"\r{text}", end=end, file=self.stream, flush=True)
            return
        if self._last.get(label) != tenth:
            self._last[label] = tenth
            self._print(text)


# -- engines ---------------------------------------------------------------------


def _connect_args(url: str) -> dict[str, Any]:
    driver = sa.make_url(url).drivername
    if driver.startswith(("postgresql", "mysql", "mariadb")):
        return {"connect_timeout": 3}
    return {}


def _server_version(engine: sa.Engine) -> str:
    """The server's own version text, short."""
    name = dialect_key(engine.dialect)
    with engine.connect() as conn:
        if name == "sqlite":
            return f"SQLite {conn.scalar(sa.text('SELECT sqlite_version()'))}"
        if name == "postgresql":
            version = str(conn.scalar(sa.text("SHOW server_version")))
            return f"PostgreSQL {version.split()[0]}"
        if name in ("mysql", "mariadb"):
            version = str(conn.scalar(sa.text("SELECT VERSION()")))
            kind = "MariaDB" if "mariadb" in version.lower() else "MySQL"
            return f"{kind} {version.split('-')[0]}"
    return name


def _emulator_version() -> str:
    dpkg = shutil.which("dpkg-query")
    if dpkg is not None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                [dpkg, "-W", "-f", "${Version}", "google-cloud-cli-spanner-emulator"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
            if out.returncode == 0 and out.stdout.strip():
                return f"Cloud Spanner emulator (google-cloud-cli-spanner-emulator {out.stdout})"
    return "Cloud Spanner emulator"


def _probe(key: str, url: str) -> Target:
    """Connect to ``url`` and describe it; raises what connecting raised."""
    if key == "spanner":
        return Target(key, "Spanner emulator", url, _emulator_version())
    engine = sa.create_engine(url, connect_args=_connect_args(url))
    try:
        server = _server_version(engine)
    finally:
        engine.dispose()
    label = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}.get(key, server.split()[0])
    return Target(key, label, url, server)


_LABELS = {
    "sqlite": "SQLite",
    "postgresql": "PostgreSQL",
    "mysql": "MariaDB/MySQL",
    "spanner": "Spanner emulator",
}


def find_targets(
    *,
    sqlite: str | None,
    postgresql: str | None,
    mysql: str | None,
    spanner: str | None,
    workdir: Path,
    notes: list[str],
) -> list[Target]:
    """The engines to run on, in the report's order; what was skipped goes to ``notes``.

    ``None`` means "the default": a SQLite file in ``workdir``, the local
    PostgreSQL and MariaDB servers when they answer (:data:`DEFAULT_URLS`),
    no Spanner. ``"none"`` skips an engine. An explicit URL that does not
    answer raises. ``spanner`` here is a URL of an existing database (the
    emulator is started by :func:`run_report`).

    Example::

        targets = find_targets(sqlite=None, postgresql=None, mysql="none", spanner=None,
                               workdir=Path("/tmp"), notes=[])
    """
    targets: list[Target] = []
    given = {"sqlite": sqlite, "postgresql": postgresql, "mysql": mysql, "spanner": spanner}
    for key, url in given.items():
        if url is not None and url.lower() == "none":
            notes.append(f"{_LABELS[key]}: skipped (`--{key} none`).")
            continue
        if url is None:
            if key == "sqlite":
                url = f"sqlite:///{workdir / 'seqkeys-report.db'}"
            elif key in DEFAULT_URLS:
                url = DEFAULT_URLS[key]
                try:
                    targets.append(_probe(key, url))
                except Exception as exc:
                    notes.append(
                        f"{_LABELS[key]}: no server answered at {url} "
                        f"({type(exc).__name__}); skipped. Give `--{key} URL` to run on it."
                    )
                continue
            else:
                continue
        targets.append(_probe(key, url))
    return targets


# -- the machine -----------------------------------------------------------------


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _ram() -> str:
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 2**20:.1f} GiB"
    return "unknown"


def _loadavg() -> str:
    with contextlib.suppress(OSError):
        return " / ".join(Path("/proc/loadavg").read_text().split()[:3])
    return "unknown"


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _machine(targets: Sequence[Target], load_start: str, load_end: str, sizes: Sizes) -> Table:
    drivers = [f"sqlite3 (SQLite library {sqlite3.sqlite_version})"]
    for package in ("psycopg", "PyMySQL", "sqlalchemy-spanner", "google-cloud-spanner"):
        version = _version(package)
        if version is not None:
            drivers.append(f"{package} {version}")
    extras = [
        f"{package} {version}"
        for package in ("matplotlib", "uuid_utils", "pyfarmhash")
        for version in [_version(package)]
        if version is not None
    ]
    table = Table(["", ""])
    table.add("CPU", f"{_cpu_model()}, {os.cpu_count()} cores (os.cpu_count())")
    table.add("RAM", _ram())
    table.add("OS", platform.platform())
    table.add("Python", f"{platform.python_implementation()} {platform.python_version()}")
    table.add("SQLAlchemy", sa.__version__)
    table.add("drivers", ", ".join(drivers))
    table.add("other packages", ", ".join(extras) or "-")
    table.add("servers", "; ".join(f"{t.server} (`{t.masked_url}`)" for t in targets))
    table.add("load average (1/5/15 min)", f"{load_start} at the start, {load_end} at the end")
    table.add(
        "sizes",
        f"inserts {sizes.insert_rows:,} rows per key ({sizes.spanner_insert_rows:,} on the "
        f"Spanner emulator); sequences {sizes.iterations:,} iterations per row "
        f"({sizes.spanner_iterations:,} on the emulator) at "
        f"{', '.join(map(str, sizes.thread_counts))} threads; insert rounds per key "
        f"{sizes.insert_repeat} (best counts)",
    )
    return table


# -- the parts -------------------------------------------------------------------


@dataclass
class _Report:
    """What the parts measured, for the text and the plots."""

    sizes: Sizes
    targets: list[Target]
    notes: list[str] = field(default_factory=list)
    grids: dict[str, dict[tuple[str, int], sequences.RunResult]] = field(default_factory=dict)
    inserts: dict[str, list[insert.Result]] = field(default_factory=dict)
    rates: dict[str, float] = field(default_factory=dict)
    spots: list[hotspots.HotspotResult] = field(default_factory=list)
    plots: dict[str, str] = field(default_factory=dict)


def _run_sequences(report: _Report, target: Target, progress: Progress) -> None:
    spanner = target.key == "spanner"
    iterations = report.sizes.spanner_iterations if spanner else report.sizes.iterations
    names = sequences.Names.prefixed(PREFIX)
    try:
        report.grids[target.key] = sequences.measure_grid(
            target.url,
            iterations=iterations,
            thread_counts=report.sizes.thread_counts,
            progress=lambda line: progress.note(line.strip()),
            repeat=report.sizes.repeat,
            names=names,
        )
    finally:
        engine = sa.create_engine(target.url)
        try:
            sequences.drop_objects(engine, names)
        except Exception as exc:  # pragma: no cover - cleanup only
            progress.note(f"could not drop {names}: {exc}")
        finally:
            engine.dispose()


def _run_inserts(report: _Report, target: Target, progress: Progress) -> None:
    spanner = target.key == "spanner"
    rows = report.sizes.spanner_insert_rows if spanner else report.sizes.insert_rows
    report.inserts[target.key] = insert.measure(
        target.url,
        rows,
        variants=insert.REPORT_VARIANTS,
        settle=report.sizes.settle,
        repeat=report.sizes.insert_repeat,
        progress=lambda name, done, total: progress.bar(name, done, total),
        prefix=PREFIX,
    )


def _guarded(report: _Report, what: str, progress: Progress, part: Callable[[], None]) -> None:
    """Run one part; a failure is reported in the notes and the run goes on."""
    try:
        part()
    except Exception as exc:
        message = f"{what} failed: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
        progress.note(message)
        report.notes.append(message)


# -- the text --------------------------------------------------------------------

_SEQ_INTRO = """\
The source's perf tool, run on each engine: {threads} threads share {iterations}
iterations; each takes one value and uses it in a simulated application
transaction of 10 ms on the same engine. `sync` is `TableSequence`
`in_transaction`, `async` is `separate`, `batch` and `async_batch` take blocks
of 200 (low watermark 50). Beside them, `none` runs the same transaction
without a key, the **ceiling** every ratio is taken against, and `native` takes
the engine's own sequence inside the transaction (an AUTOINCREMENT insert on
SQLite and MySQL, a `bit_reversed_positive` sequence on Spanner). The source's
numbers are Spanner's, from a 4-vCPU client VM (BRIEF section 1); `vs source`
is values/s here divided by values/s there. `latency vs ceiling` gives each
percentile divided by the same percentile of `none`.
"""

_INSERT_INTRO = """\
{rounds}{rows} rows per key (a key plus 100 characters) inserted through SQLAlchemy in
batches of 1,000 rows, one transaction each, into a fresh table whose primary
key is the key. Every key is minted client-side by the column default (BIGINT
from an in-process counter, `bit-reversed` is `reverse_bits` over one,
`snowflake` is `Snowflake(worker_id=1)`), so all take the same batched INSERT
path and the time includes minting. `uuid4`, `comb` and `uuid7` use `CombGuid`
(PostgreSQL `UUID`, MariaDB `CHAR(36) CHARACTER SET ascii`, SQLite and Spanner
36 characters). The size is the table plus its indexes after the last row
(PostgreSQL after `VACUUM ANALYZE`, MariaDB `data_length + index_length`
after `ANALYZE TABLE`, SQLite from its pages); the Spanner emulator reports
none.
"""


def _grid_table(grid: dict[tuple[str, int], sequences.RunResult]) -> Table:
    """The sequence table with every number beside its ratio to the ceiling and the source."""
    table = Table(
        [
            "mode",
            "threads",
            "values/s",
            "vs ceiling",
            "p50 / p90 / p99 ms",
            "latency vs ceiling",
            "source values/s",
            "vs source",
            "source p50 / p90 / p99 ms",
        ]
    )
    percentiles = (50, 90, 99)
    for (mode, threads), r in grid.items():
        ceiling = grid.get(("none", threads))
        published = sequences.PUBLISHED.get((mode, threads))
        latency = [r.percentile(p) for p in percentiles]
        table.add(
            f"`{mode}`",
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


def _seq_section(report: _Report) -> list[str]:
    threads = " and ".join(map(str, report.sizes.thread_counts))
    lines = [
        SECTIONS[1],
        "",
        _SEQ_INTRO.format(threads=threads, iterations=f"{report.sizes.iterations:,}"),
    ]
    if report.sizes.repeat > 1:
        lines.append(f"Each row is the median of {report.sizes.repeat} interleaved runs.\n")
    for target in report.targets:
        lines.append(f"### {target.server}\n")
        grid = report.grids.get(target.key)
        if grid is None:
            lines.append("Not measured: see the notes.\n")
            continue
        if target.key == "spanner":
            lines.append(
                f"{report.sizes.spanner_iterations:,} iterations per row. The emulator runs "
                "one read-write transaction at a time and aborts the others (they retry), "
                "so every mode that writes in parallel queues behind it: these numbers show "
                "the emulator, not Spanner.\n"
            )
        if target.key == "sqlite":
            lines.append(
                "SQLite has one writer: `sync` and `native` hold the write lock through the "
                "10 ms transaction, so they run one at a time.\n"
            )
        lines.append(format_markdown(_grid_table(grid)))
        lines.append("")
    if "sequences" in report.plots:
        lines.append(
            f"![values/s per mode and engine, beside the ceiling and the source]"
            f"({report.plots['sequences']})\n"
        )
    return lines


#: What the source (and the brief's earlier local run) say about inserts, per engine.
_INSERT_SOURCE = {
    "postgresql": "source: COMB as string almost 2x faster than random (uuid4 / COMB ~2x); "
    "this project's earlier run (BRIEF section 4): uuid4 1.41x, COMB 1.23x",
    "mysql": "source (MySQL `char(36)`): very slow with random GUIDs (no figure); "
    "earlier run: uuid4 3.83x, COMB 1.37x",
    "sqlite": "source: either layout works (no figure)",
    "spanner": "not in the source's insert test (its advice: no monotonic key first)",
}


def _insert_section(report: _Report) -> list[str]:
    lines = [
        SECTIONS[2],
        "",
        _INSERT_INTRO.format(
            rows=f"{report.sizes.insert_rows:,}",
            rounds=(
                f"Best of {report.sizes.insert_repeat} interleaved rounds per key. "
                if report.sizes.insert_repeat > 1
                else ""
            ),
        ),
    ]
    summary = Table(["engine", "COMB vs BIGINT", "uuid4 vs BIGINT", "uuid4 / COMB", "published"])
    for target in report.targets:
        results = report.inserts.get(target.key)
        lines.append(f"### {target.server}\n")
        if not results:
            lines.append("Not measured: see the notes.\n")
            continue
        if target.key == "spanner":
            lines.append(
                f"{results[0].rows:,} rows per key only: the emulator is an in-memory "
                "test double that executes one transaction at a time, not a performance "
                "model of Spanner; the ratios show its costs, not Spanner's.\n"
            )
        table = insert.results_table(results, baseline="BIGINT", code=True)
        lines += [format_markdown(table), ""]
        by = {r.variant: r for r in results}
        if {"bigint", "comb", "uuid4"} <= by.keys():
            summary.add(
                target.label,
                ratio(by["comb"].seconds, by["bigint"].seconds),
                ratio(by["uuid4"].seconds, by["bigint"].seconds),
                ratio(by["uuid4"].seconds, by["comb"].seconds),
                _INSERT_SOURCE.get(target.key, "-"),
            )
    summary.add("SQL Server (source only)", "1.08x (AtEnd)", "-", "-", "source: within 8.4% of int")
    lines += [
        "### Beside the source's published numbers\n",
        "The source inserted 2 million rows of a GUID and 100 characters per engine "
        "(BRIEF section 4); it gives ratios for SQL Server and PostgreSQL only.\n",
        format_markdown(summary),
        "",
    ]
    if "insert" in report.plots:
        lines.append(f"![insert time and size relative to BIGINT]({report.plots['insert']})\n")
    return lines


_GEN_SOURCE = {
    "uuid.uuid4": "1.00x (.NET `Guid.NewGuid`, 140 ms per million)",
    "new_comb(AS_STRING)": "0.05x (.NET COMB, 2,800 ms per million)",
}


def _gen_section(report: _Report) -> list[str]:
    rates = report.rates
    lines = [
        SECTIONS[3],
        "",
        f"Ids per second from one thread, the best of {report.sizes.gen_rounds} interleaved "
        f"rounds of {report.sizes.gen_seconds:g} s, relative to `uuid.uuid4` of the same "
        "run. `TableSequence` is not here: its cost is its database round trips "
        "(section 1), not minting. The source timed its COMB at 20x slower than a random "
        "GUID in .NET, most of it the crypto generator.\n",
    ]
    if not rates:
        return [*lines, "Not measured: see the notes.\n"]
    base = rates["uuid.uuid4"]
    table = Table(["generator", "ids/s", "vs uuid.uuid4", "ns/id", "source"])
    for name, rate in sorted(rates.items(), key=lambda item: -item[1]):
        table.add(
            f"`{name}`",
            f"{rate:,.0f}",
            f"{rate / base:.2f}x",
            f"{1e9 / rate:,.0f}",
            _GEN_SOURCE.get(name, "-"),
        )
    lines += [format_markdown(table), ""]
    if not any(name.startswith("uuid_utils") for name in rates):
        lines.append(
            "`uuid_utils` (Rust) is not installed here, so it is not measured: "
            "`pip install uuid_utils` adds `uuid_utils.uuid4` and `uuid_utils.uuid7`.\n"
        )
    if "generate" in report.plots:
        lines.append(f"![ids/s relative to uuid.uuid4]({report.plots['generate']})\n")
    return lines


def _hotspot_section(report: _Report) -> list[str]:
    lines = [
        SECTIONS[4],
        "",
        "A model, not a database (`seqkeys hotspots`, see `sqlalchemy_seqkeys/hotspots.py`): "
        "keys of each strategy are written in order into a store of sorted key ranges that "
        "split at their median when they grow past a size, as Spanner's splits and TiKV's "
        "regions do. `hottest share` is the mean share of a window's writes that the "
        "busiest range took (late windows); `x uniform` is that share relative to an even "
        "spread over the live ranges (1.0 is perfectly even).\n",
    ]
    if not report.spots:
        return [*lines, "Not measured: see the notes.\n"]
    table = Table(
        ["strategy", "ranges (end)", "hottest share", "x uniform", "hot ranges", "verdict"]
    )
    for r in report.spots:
        table.add(
            r.strategy,
            r.final_ranges,
            f"{r.late_hottest:.3f}",
            f"{r.times_uniform:.1f}x",
            f"{r.late_effective:.1f}",
            r.verdict,
        )
    first = report.spots[0]
    lines += [
        f"{first.writes:,} writes per strategy, ranges split above {first.split_keys:,} "
        f"keys, windows of {first.window:,} writes.\n",
        format_markdown(table),
        "",
    ]
    if "hotspots" in report.plots:
        lines.append(f"![writes per key range over time]({report.plots['hotspots']})\n")
    return lines


def _sequence_findings(report: _Report) -> list[str]:
    bullets = []
    sync_rates = [
        grid[mode, threads].rate
        for key, grid in report.grids.items()
        if key != "spanner"
        for (mode, threads) in grid
        if mode == "sync"
    ]
    if sync_rates:
        bullets.append(
            f"`sync` took {min(sync_rates):,.1f} to {max(sync_rates):,.1f} values/s on every "
            "server engine and thread count (the source: 34 and 30.6): one row lock held through "
            "each 10 ms application transaction caps it near 1 / (transaction latency), "
            "however many threads wait. That is the source's point, reproduced."
        )
    for target in report.targets:
        grid = report.grids.get(target.key)
        if not grid:
            continue
        rows = [(key, r) for key, r in grid.items() if key in sequences.PUBLISHED]
        below = [(key, r) for key, r in rows if r.rate < sequences.PUBLISHED[key][0]]
        text = f"{target.label}: {len(rows) - len(below)} of the source's {len(rows)} rows "
        text += "reached or beaten."
        reasons = []
        if target.key == "spanner" and below:
            text += (
                " The emulator runs one read-write transaction at a time and aborts the "
                "others, so every mode queues behind it: "
                + ", ".join(
                    f"`{mode}` x {threads} {r.rate:,.1f} (source "
                    f"{sequences.PUBLISHED[mode, threads][0]:,.1f})"
                    for (mode, threads), r in below
                )
                + "."
            )
            below = []
        for (mode, threads), r in below:
            published = sequences.PUBLISHED[mode, threads][0]
            ceiling = grid.get(("none", threads))
            if ceiling is not None and ceiling.rate < published:
                why = (
                    f"this machine's ceiling, the same transaction without a key, is "
                    f"{ceiling.rate:,.0f} values/s, itself below the source's number; the mode "
                    f"ran at {r.rate / ceiling.rate:.2f}x of it"
                )
            else:
                why = "see the table"
            reasons.append(
                f"`{mode}` at {threads} threads {r.rate:,.1f} against {published:,.1f} ({why})"
            )
        if reasons:
            text += " Below: " + "; ".join(reasons) + "."
        bullets.append(text)
    return bullets


def _insert_findings(report: _Report) -> list[str]:
    bullets = []
    for target in report.targets:
        by = {r.variant: r for r in report.inserts.get(target.key, [])}
        if not {"bigint", "uuid4", "comb"} <= by.keys():
            continue
        random_over_comb = by["uuid4"].seconds / by["comb"].seconds
        text = (
            f"{target.label}: COMB {by['comb'].seconds / by['bigint'].seconds:.2f}x BIGINT, "
            f"uuid4 {by['uuid4'].seconds / by['bigint'].seconds:.2f}x BIGINT, so random keys "
            f"took {random_over_comb:.2f}x the COMB time"
        )
        if target.key == "postgresql":
            text += " (the source: almost 2x)"
            if random_over_comb < 1.5:
                text += (
                    f". Not reproduced: here the whole index of {by['uuid4'].rows:,} random "
                    "`uuid` keys stays in memory, so a random insert costs little more than "
                    "an ordered one; the source's gap needs an index larger than its cache"
                )
        elif target.key == "mysql":
            verdict = "reproduced" if random_over_comb >= 2 else "not clearly, at this size"
            text += f" (the source: MySQL 'very slow' with random GUIDs; {verdict})"
        elif target.key == "spanner":
            text += (
                " (the emulator keeps everything in memory and has no page splits: it "
                "cannot show what key order costs on Spanner)"
            )
        if "bit-reversed" in by and target.key != "spanner":
            text += (
                f". Bit-reversed keys, which spread Spanner's writes, are random to a B-tree: "
                f"{by['bit-reversed'].seconds / by['bigint'].seconds:.2f}x BIGINT"
            )
        bullets.append(text + ".")
    return bullets


def _against_source_section(report: _Report) -> list[str]:
    bullets = _sequence_findings(report) + _insert_findings(report)
    rates = report.rates
    if "new_comb(AS_STRING)" in rates and "uuid.uuid4" in rates:
        ratio = rates["new_comb(AS_STRING)"] / rates["uuid.uuid4"]
        bullets.append(
            f"Minting a COMB ran at {ratio:.2f}x the rate of `uuid.uuid4` here against 0.05x "
            "(20 times slower) in the source. Not reproduced, on purpose: in Python both "
            "take their random bytes from `os.urandom`, and the timestamp costs little; the "
            ".NET COMB paid for a crypto generator that `Guid.NewGuid` did not."
        )
    verdicts = {r.strategy: r.verdict for r in report.spots}
    ordered = [n for n in ("monotonic", "snowflake", "comb", "uuid7") if n in verdicts]
    if ordered and all(verdicts[n] == "one hot range" for n in ordered):
        text = (
            f"Hotspots: {', '.join(ordered)} send every write to one range, as the source "
            "warns for a monotonic first key column on Spanner and TiDB"
        )
        if "snowflake-rot1" in verdicts:
            text += (
                f"; rotating one digit of a snowflake id gives {verdicts['snowflake-rot1']}, "
                "the TiDB article's ten regions"
            )
        spread = [n for n in ("bit-reversed", "shard-hash", "uuid4") if n in verdicts]
        if spread:
            text += "; " + ", ".join(f"{n} {verdicts[n]}" for n in spread)
        bullets.append(text + ".")
    if not bullets:
        bullets.append("Nothing was measured that the source measured.")
    return [SECTIONS[5], "", *(f"- {b}" for b in bullets), ""]


def _markdown(
    report: _Report, command: str, began: dt.datetime, seconds: float, machine: Table
) -> str:
    minutes, secs = divmod(int(seconds), 60)
    head = [
        "# Benchmarks",
        "",
        f"Written by `{command}` on {began:%Y-%m-%d %H:%M} UTC; the run took "
        f"{minutes} min {secs:02d} s.",
        "",
        "Every number is given as an absolute and as a ratio to its baseline measured in "
        "the same run, minutes apart at most: the sequence modes against the ceiling (the "
        "same transaction without a key), inserts against a BIGINT key, minting against "
        "`uuid.uuid4`, hotspots against an even spread. The absolute numbers depend on "
        "the machine and on whatever else it runs; the ratios much less. This run shared "
        f"a {os.cpu_count()}-core machine with other work (see the load average), so "
        "single numbers can be off by 10-20%.",
        "",
        SECTIONS[0],
        "",
        format_markdown(machine),
        "",
    ]
    body = (
        _seq_section(report)
        + _insert_section(report)
        + _gen_section(report)
        + _hotspot_section(report)
    )
    body += _against_source_section(report)
    notes = [SECTIONS[6], ""]
    notes += [f"- {note}" for note in report.notes] or ["- Nothing was skipped."]
    return "\n".join([*head, *body, *notes, ""])


# -- the plots -------------------------------------------------------------------


def _plot_sequences(report: _Report, path: Path) -> None:
    from matplotlib.figure import Figure

    targets = [t for t in report.targets if t.key in report.grids]
    threads = report.sizes.thread_counts
    fig = Figure(figsize=(5.2 * len(threads), 3.2 * len(targets) + 0.6), layout="constrained")
    axes = fig.subplots(len(targets), len(threads), squeeze=False)
    modes = ["none", "native", "sync", "async", "batch", "async_batch"]
    for row, target in enumerate(targets):
        grid = report.grids[target.key]
        for col, count in enumerate(threads):
            ax = axes[row][col]
            here = [grid[m, count].rate if (m, count) in grid else 0.0 for m in modes]
            source = [sequences.PUBLISHED.get((m, count), (0.0,))[0] for m in modes]
            xs = list(range(len(modes)))
            ax.bar([x - 0.2 for x in xs], here, width=0.4, label="here", color="tab:blue")
            ax.bar(
                [x + 0.2 for x in xs],
                source,
                width=0.4,
                label="source (Spanner)",
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


def _sizeratio(result: insert.Result | None, base: insert.Result) -> float:
    if result is None or result.size_bytes is None or not base.size_bytes:
        return 0.0
    return result.size_bytes / base.size_bytes


def _plot_inserts(report: _Report, path: Path) -> None:
    from matplotlib.figure import Figure

    targets = [t for t in report.targets if report.inserts.get(t.key)]
    variants = list(insert.REPORT_VARIANTS)
    fig = Figure(figsize=(11, 4), layout="constrained")
    time_ax, size_ax = fig.subplots(1, 2)
    width = 0.8 / max(len(targets), 1)
    for index, target in enumerate(targets):
        by = {r.variant: r for r in report.inserts[target.key]}
        base = by.get("bigint")
        if base is None:
            continue
        xs = [i - 0.4 + width * (index + 0.5) for i in range(len(variants))]
        times = [by[v].seconds / base.seconds if v in by else 0.0 for v in variants]
        time_ax.bar(xs, times, width=width, label=target.label)
        sizes = [_sizeratio(by.get(v), base) for v in variants]
        if any(sizes):
            size_ax.bar(xs, sizes, width=width, label=target.label)
    for ax, what in ((time_ax, "insert time"), (size_ax, "table + index size")):
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(variants)), variants, fontsize=8)
        ax.set_ylabel(f"{what} vs BIGINT", fontsize=8)
        ax.set_title(f"{what} relative to a BIGINT key", fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(f"Inserts of {report.sizes.insert_rows:,} rows per key (Spanner emulator: fewer)")
    fig.savefig(path, dpi=80)


def _plot_generate(report: _Report, path: Path) -> None:
    from matplotlib.figure import Figure

    rates = sorted(report.rates.items(), key=lambda item: item[1])
    base = report.rates["uuid.uuid4"]
    fig = Figure(figsize=(8, 0.35 * len(rates) + 1.2), layout="constrained")
    ax = fig.subplots()
    names = [name for name, _ in rates]
    ratios = [rate / base for _, rate in rates]
    colors = ["tab:gray" if name == "uuid.uuid4" else "tab:blue" for name in names]
    ax.barh(names, ratios, color=colors)
    for y, times in enumerate(ratios):
        ax.annotate(f" {times:.2f}x", (times, y), va="center", fontsize=7)
    ax.set_xscale("log")
    ax.set_xlim(min(ratios) * 0.8, max(ratios) * 1.6)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("ids/s relative to uuid.uuid4 (log)", fontsize=8)
    ax.tick_params(axis="y", labelsize=8)
    ax.set_title("Key generation speed, one thread", fontsize=10)
    fig.savefig(path, dpi=80)


def _write_plots(report: _Report, out: Path, plots_dir: Path, progress: Progress) -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        report.notes.append(
            "No plots: matplotlib is not installed (pip install 'sqlalchemy-seqkeys[plot]')."
        )
        return
    plots_dir.mkdir(parents=True, exist_ok=True)
    drawers: dict[str, Callable[[Path], None]] = {}
    if report.grids:
        drawers["sequences"] = lambda path: _plot_sequences(report, path)
    if any(report.inserts.values()):
        drawers["insert"] = lambda path: _plot_inserts(report, path)
    if report.rates:
        drawers["generate"] = lambda path: _plot_generate(report, path)
    if report.spots:
        drawers["hotspots"] = lambda path: hotspots.plot(report.spots, path)
    for name, draw in drawers.items():
        path = plots_dir / f"{name}.png"
        try:
            draw(path)
        except Exception as exc:
            report.notes.append(f"plot {name} failed: {type(exc).__name__}: {exc}")
            continue
        report.plots[name] = Path(os.path.relpath(path, out)).as_posix()
        progress.note(f"wrote {path}")


# -- the run ---------------------------------------------------------------------


@contextlib.contextmanager
def _spanner_url(spanner: str | None, quick: bool, notes: list[str]) -> Iterator[str | None]:
    """The Spanner URL to run on: given, or a database on an emulator found or started."""
    from sqlalchemy_seqkeys.bench._emulator import EMULATOR_HOST_ENV, EmulatorDatabase

    if spanner is not None and spanner.lower() == "none":
        notes.append("Spanner emulator: skipped (`--spanner none`).")
        yield None
        return
    if spanner is not None and spanner.lower() != "start":
        yield spanner
        return
    if spanner is None and (quick or not os.environ.get(EMULATOR_HOST_ENV)):
        why = "with --quick" if quick else f"{EMULATOR_HOST_ENV} is not set"
        notes.append(
            f"Spanner emulator: not run ({why}); `--spanner start` starts one, "
            "`--spanner URL` uses a database on one."
        )
        yield None
        return
    with EmulatorDatabase(start=True) as url:
        yield url


def run_report(
    out: Path,
    *,
    sizes: Sizes = FULL,
    quick: bool = False,
    sqlite: str | None = None,
    postgresql: str | None = None,
    mysql: str | None = None,
    spanner: str | None = None,
    plots_dir: str = "docs/bench",
    command: str = "seqkeys bench report",
    progress: Progress | None = None,
) -> Path:
    """Run every benchmark on every engine; write ``out/BENCHMARKS.md`` and the plots.

    Returns the path of ``BENCHMARKS.md``. A part that fails on one engine is
    reported in the notes and the run goes on.

    Example::

        run_report(Path("/tmp/report"), sizes=QUICK, quick=True)
    """
    progress = progress or Progress()
    began = dt.datetime.now(dt.timezone.utc)
    started = time.perf_counter()
    load_start = _loadavg()
    out.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="seqkeys-report-")))
        progress.stage("finding the engines")
        spanner_url = stack.enter_context(_spanner_url(spanner, quick, notes))
        targets = find_targets(
            sqlite=sqlite,
            postgresql=postgresql,
            mysql=mysql,
            spanner=spanner_url,
            workdir=workdir,
            notes=notes,
        )
        for target in targets:
            progress.note(f"{target.label}: {target.server} at {target.masked_url}")
        report = _Report(sizes, targets, notes)
        progress.steps = 4 + 2 * len(targets)

        progress.stage("key generation speed")
        _guarded(
            report,
            "key generation",
            progress,
            lambda: report.rates.update(
                generate.measure(sizes.gen_seconds, sizes.gen_rounds, generate.all_candidates())
            ),
        )
        progress.stage("hotspot model")
        _guarded(
            report,
            "hotspots",
            progress,
            lambda: report.spots.extend(
                hotspots.run(
                    writes=sizes.hotspot_writes,
                    split_keys=sizes.hotspot_split_keys,
                    window=sizes.hotspot_window,
                )
            ),
        )
        for target in targets:
            progress.stage(f"sequences on {target.label}")
            _guarded(
                report,
                f"sequences on {target.label}",
                progress,
                partial(_run_sequences, report, target, progress),
            )
            progress.stage(f"inserts on {target.label}")
            _guarded(
                report,
                f"inserts on {target.label}",
                progress,
                partial(_run_inserts, report, target, progress),
            )
    progress.stage("plots and BENCHMARKS.md")
    plots = Path(plots_dir) if Path(plots_dir).is_absolute() else out / plots_dir
    _write_plots(report, out, plots, progress)
    machine = _machine(targets, load_start, _loadavg(), sizes)
    text = _markdown(report, command, began, time.perf_counter() - started, machine)
    path = out / "BENCHMARKS.md"
    path.write_text(text)
    progress.note(f"wrote {path} in {progress.elapsed()}")
    return path


def sizes_for(quick: bool, **overrides: Any) -> Sizes:
    """:data:`QUICK` or :data:`FULL`, with the fields given in ``overrides`` (None: keep).

    Example::

        >>> sizes_for(True, insert_rows=None, iterations=50).iterations
        50
    """
    base = QUICK if quick else FULL
    return replace(base, **{k: v for k, v in overrides.items() if v is not None})
