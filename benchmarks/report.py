"""``python -m benchmarks report``: every benchmark on every engine, as ``BENCHMARKS.md``.

On each engine it is given or finds running, it runs the ``sequences`` and
``insert`` benchmarks; once, without a database, ``generate`` and the
``hotspots`` model. Each benchmark module measures, and returns a part that
renders its own section, findings and plot (:class:`Part`); this module only
runs them in order, draws the plots, and puts the parts together with the
machine they ran on::

    $ python -m benchmarks report --out .                       # the full run: ~30 minutes
    $ python -m benchmarks report --quick --out /tmp/report     # a smoke run: about a minute

It writes ``OUT/BENCHMARKS.md`` and PNG plots under ``OUT/docs/bench/``
(``--plots-dir``; linked relatively, so the report can live at a repository's
root). Engines: a temporary SQLite file always; PostgreSQL and MariaDB/MySQL at
the URLs given (``--postgresql URL``, ``--mysql URL``) or, by default, the local
servers when they answer; the Spanner emulator with ``--spanner URL``,
``--spanner start``, or when ``SPANNER_EMULATOR_HOST`` is set (not with
``--quick``). ``none`` skips one.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import shlex
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Protocol

from benchmarks import generate, hotspots, insert, sequences
from benchmarks._engines import find_targets, portable_word, spanner_database
from benchmarks._machine import loadavg, machine_table
from benchmarks._progress import Progress
from benchmarks._table import format_markdown

__all__ = [
    "FULL",
    "HELP",
    "QUICK",
    "SECTIONS",
    "Part",
    "Sizes",
    "add_arguments",
    "main",
    "run_report",
]

HELP = "every benchmark on every engine, written to DIR/BENCHMARKS.md with PNG plots"

#: The report's section headings, in order (a test checks them).
SECTIONS = (
    "## Machine",
    sequences.HEADING,
    insert.HEADING,
    generate.HEADING,
    hotspots.HEADING,
    "## Against the published articles",
    "## Notes",
)

#: Tables and sequences the report creates have names of their own, so that a
#: test suite using the same database at the same time does not meet them.
PREFIX = "seqkeys_report"


class Part(Protocol):
    """What each benchmark module returns to the report: its section, findings and plot."""

    plot_name: str

    @property
    def measured(self) -> bool:
        """Whether there is anything to show (and to plot)."""

    def markdown(self, plot: str | None) -> list[str]:
        """The section's lines; ``plot`` is the relative link of its PNG, if drawn."""

    def findings(self) -> list[str]:
        """Bullets for "Against the published articles"."""

    def plot(self, path: Path) -> None:
        """Draw the PNG (needs matplotlib)."""


@dataclass(frozen=True)
class Sizes:
    """How much each part of the report runs.

    Example::

        >>> replace(QUICK, insert_rows=2_000).insert_rows
        2000
    """

    insert_rows: int  # rows per insert variant (SQLite, PostgreSQL, MariaDB/MySQL)
    spanner_insert_rows: int  # the same on the Spanner emulator
    iterations: int  # iterations per row of the sequence table
    spanner_iterations: int  # the same on the Spanner emulator
    thread_counts: tuple[int, ...]  # of the sequence table (the guide's: 10 and 50)
    repeat: int  # interleaved runs per sequence mode (the median counts)
    gen_seconds: float  # seconds per timed round of the generation benchmark
    gen_rounds: int  # interleaved rounds of it (the best counts)
    hotspot_writes: int  # writes per strategy of the hotspot model
    hotspot_split_keys: int  # a range splits when it holds more keys than this
    hotspot_window: int  # writes per time window of the hotspot model
    settle: float  # seconds to wait after each insert variant (the server's background work)
    insert_repeat: int = 1  # interleaved rounds of the insert variants (each keeps its fastest)

    def describe(self) -> str:
        """The machine table's "sizes" row."""
        return (
            f"inserts {self.insert_rows:,} rows per key ({self.spanner_insert_rows:,} on the "
            f"Spanner emulator); sequences {self.iterations:,} iterations per row "
            f"({self.spanner_iterations:,} on the emulator) at "
            f"{', '.join(map(str, self.thread_counts))} threads; insert rounds per key "
            f"{self.insert_repeat} (best counts)"
        )


#: The full run: a million rows per insert variant (best of two rounds), the guide's
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


def _guarded(notes: list[str], what: str, progress: Progress, step: Callable[[], object]) -> None:
    """Run one step; a failure is reported in the notes and the run goes on."""
    try:
        step()
    except Exception as exc:
        message = f"{what} failed: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
        progress.note(message)
        notes.append(message)


def _draw(parts: Sequence[Part], out: Path, plots_dir: Path, notes: list[str]) -> dict[str, str]:
    """Each measured part's plot; returns their links relative to ``out``."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        notes.append(
            "No plots: matplotlib is not installed (pip install 'sqlalchemy-seqkeys[plot]')."
        )
        return {}
    plots_dir.mkdir(parents=True, exist_ok=True)
    links = {}
    for part in parts:
        if not part.measured:
            continue
        path = plots_dir / f"{part.plot_name}.png"
        try:
            part.plot(path)
        except Exception as exc:
            notes.append(f"plot {part.plot_name} failed: {type(exc).__name__}: {exc}")
            continue
        links[part.plot_name] = Path(os.path.relpath(path, out)).as_posix()
    return links


def _markdown(
    parts: Sequence[Part], links: dict[str, str], notes: list[str], *, head: list[str]
) -> str:
    findings = [bullet for part in parts for bullet in part.findings()]
    lines = list(head)
    for part in parts:
        lines += part.markdown(links.get(part.plot_name))
    lines += [SECTIONS[5], ""]
    lines += [f"- {b}" for b in findings] or ["- Nothing was measured that the articles measured."]
    lines += ["", SECTIONS[6], ""]
    lines += [f"- {note}" for note in notes] or ["- Nothing was skipped."]
    return "\n".join([*lines, ""])


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
    command: str = "python -m benchmarks report",
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
    load_start = loadavg()
    out.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="seqkeys-report-")))
        progress.stage("finding the engines")
        spanner_url = stack.enter_context(spanner_database(spanner, quick=quick, notes=notes))
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
        gen = generate.GenerateReport(sizes.gen_seconds, sizes.gen_rounds)
        spots = hotspots.HotspotReport()
        grid = sequences.GridReport(
            targets, sizes.iterations, sizes.spanner_iterations, sizes.thread_counts, sizes.repeat
        )
        inserts = insert.InsertReport(
            targets, sizes.insert_rows, sizes.spanner_insert_rows, sizes.insert_repeat
        )
        steps: list[tuple[str, Callable[[], object]]] = [
            ("key generation", gen.measure),
            (
                "hotspots",
                partial(
                    spots.measure,
                    writes=sizes.hotspot_writes,
                    split_keys=sizes.hotspot_split_keys,
                    window=sizes.hotspot_window,
                ),
            ),
        ]
        for t in targets:
            measure_seq = partial(grid.measure, t, progress=progress.note, prefix=PREFIX)
            measure_ins = partial(
                inserts.measure, t, settle=sizes.settle, progress=progress.bar, prefix=PREFIX
            )
            steps += [
                (f"sequences on {t.label}", measure_seq),
                (f"inserts on {t.label}", measure_ins),
            ]
        progress.steps = 2 + len(steps)
        for what, step in steps:
            progress.stage(what)
            _guarded(notes, what, progress, step)
    progress.stage("plots and BENCHMARKS.md")
    parts: list[Part] = [grid, inserts, gen, spots]
    plots = Path(plots_dir) if Path(plots_dir).is_absolute() else out / plots_dir
    links = _draw(parts, out, plots, notes)
    minutes, seconds = divmod(int(time.perf_counter() - started), 60)
    machine = machine_table(targets, load_start, loadavg(), sizes.describe())
    head = [
        "# Benchmarks",
        "",
        f"Written by `{command}` on {began:%Y-%m-%d %H:%M} UTC; the run took "
        f"{minutes} min {seconds:02d} s.",
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
    path = out / "BENCHMARKS.md"
    path.write_text(_markdown(parts, links, notes, head=head))
    progress.note(f"wrote {path} in {progress.elapsed()}")
    return path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``python -m benchmarks report``."""
    parser.description = (
        "Run every benchmark on SQLite (a temp file), PostgreSQL and MariaDB/MySQL (the local "
        "servers when they answer, or the URLs given) and the Spanner emulator (when given or "
        "SPANNER_EMULATOR_HOST is set); write DIR/BENCHMARKS.md and plots under DIR/PLOTS_DIR. "
        "Progress goes to stderr."
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="where to write the report")
    parser.add_argument(
        "--quick", action="store_true", help="small sizes, no emulator unless given: a smoke run"
    )
    parser.add_argument(
        "--plots-dir",
        default="docs/bench",
        metavar="SUBDIR",
        help="PNG directory, relative to DIR (default: %(default)s); linked relatively",
    )
    for key, what in (
        ("sqlite", "default: a temporary file"),
        ("postgresql", "default: postgresql+psycopg://postgres@127.0.0.1:5432/test if it answers"),
        (
            "mysql",
            "MariaDB or MySQL; default: mysql+pymysql://root@127.0.0.1:3306/test if it answers",
        ),
    ):
        parser.add_argument(f"--{key}", metavar="URL", help=f"{what}; 'none' skips it")
    parser.add_argument(
        "--spanner",
        metavar="URL",
        help="a database on the Spanner emulator; 'start' starts emulator_main; default: a "
        "new database on $SPANNER_EMULATOR_HOST when set (not with --quick); 'none' skips it",
    )
    sizes = parser.add_argument_group("sizes (defaults: the full or the --quick run)")
    for option, kind, what in (
        ("--insert-rows", int, "rows per insert variant"),
        ("--spanner-insert-rows", int, "the same on the emulator"),
        ("--iterations", int, "iterations per sequence table row"),
        ("--spanner-iterations", int, "the same on the emulator"),
        ("--threads", str, "comma-separated thread counts (full run: 10,50)"),
        ("--repeat", int, "interleaved runs per sequence mode (median)"),
        (
            "--insert-repeat",
            int,
            "interleaved rounds of the insert variants; each keeps its fastest",
        ),
        ("--settle", float, "seconds to wait after each insert variant"),
    ):
        sizes.add_argument(option, type=kind, metavar="N", help=what)


def main(args: argparse.Namespace) -> int:
    """Run the report with the sizes and engines of the command line; print its path."""
    try:
        threads = (
            None
            if args.threads is None
            else tuple(int(t) for t in args.threads.split(",") if t.strip())
        )
    except ValueError:
        print(f"--threads takes numbers like 10,50, not {args.threads!r}", file=sys.stderr)
        return 2
    overrides = {
        "insert_rows": args.insert_rows,
        "spanner_insert_rows": args.spanner_insert_rows,
        "iterations": args.iterations,
        "spanner_iterations": args.spanner_iterations,
        "thread_counts": threads,
        "repeat": args.repeat,
        "settle": args.settle,
        "insert_repeat": args.insert_repeat,
    }
    given = {key: value for key, value in overrides.items() if value is not None}
    sizes = replace(QUICK if args.quick else FULL, **given)
    words = [portable_word(word) for word in getattr(args, "argv", ["report"])]
    try:
        path = run_report(
            Path(args.out),
            sizes=sizes,
            quick=args.quick,
            sqlite=args.sqlite,
            postgresql=args.postgresql,
            mysql=args.mysql,
            spanner=args.spanner,
            plots_dir=args.plots_dir,
            command=shlex.join(["python", "-m", "benchmarks", *words]),
        )
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0
