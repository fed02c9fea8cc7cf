"""``python -m benchmarks insert``: insert time of each key strategy relative to a BIGINT key.

Reproduces the insert experiment of the COMB GUID article: rows of a key plus
100 characters, inserted through SQLAlchemy in batches of 1,000 (one
transaction per batch) into a fresh table whose primary key is the key::

    $ python -m benchmarks insert --url postgresql+psycopg://postgres@127.0.0.1/test --rows 1000000

Every key is minted client-side by the column default (the BIGINT baseline
from an in-process counter), so all variants take the same batched INSERT
path and the time includes minting the keys. The table gives each variant's
time and table-plus-index size as a ratio to BIGINT.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from benchmarks._engines import Target, backend, configure_for_spanner, masked
from benchmarks._table import Table, format_markdown, format_table, ratio, write_plot
from sqlalchemy_seqkeys import CombGuid, Snowflake, new_comb_guid, new_uuid7, reverse_bits

__all__ = [
    "DEFAULT_VARIANTS",
    "HEADING",
    "HELP",
    "REPORT_VARIANTS",
    "VARIANTS",
    "InsertReport",
    "Result",
    "Variant",
    "add_arguments",
    "bench_engine",
    "main",
    "measure",
    "render",
    "results_table",
    "run_variant",
]

HELP = "insert time and table size per key strategy, relative to a BIGINT key"
HEADING = "## 2. Inserts: time and size relative to BIGINT"

PAYLOAD = "x" * 100


@dataclass(frozen=True)
class Variant:
    """One key strategy: the key column's type and its Python default."""

    name: str
    key_type: Callable[[], sa.types.TypeEngine[Any]]
    #: builds a fresh default for one run (so counters start at 1)
    make_default: Callable[[], Callable[..., Any]]


def _counter() -> Callable[[], int]:
    return itertools.count(1).__next__


def _uuid4_text() -> Callable[[], str]:
    return lambda: str(uuid.uuid4())


def _comb_text() -> Callable[..., str]:
    return lambda ctx: str(new_comb_guid(ctx))


def _bit_reversed() -> Callable[[], int]:
    """Spanner's ``bit_reversed_positive`` values, over an in-process counter 1, 2, 3, ..."""
    counter = itertools.count(1).__next__
    return lambda: reverse_bits(counter())


def _snowflake() -> Callable[[], int]:
    return Snowflake(worker_id=1)


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in [
        Variant("bigint", sa.BigInteger, _counter),
        Variant("uuid4", CombGuid, lambda: uuid.uuid4),
        Variant("comb", CombGuid, lambda: new_comb_guid),
        Variant("comb-binary", lambda: CombGuid(binary=True), lambda: new_comb_guid),
        Variant("uuid4-binary", lambda: CombGuid(binary=True), lambda: uuid.uuid4),
        Variant("uuid4-char36", lambda: sa.CHAR(36), _uuid4_text),
        Variant("comb-char36", lambda: sa.CHAR(36), _comb_text),
        Variant("uuid7", CombGuid, lambda: new_uuid7),
        Variant("snowflake", sa.BigInteger, _snowflake),
        Variant("bit-reversed", sa.BigInteger, _bit_reversed),
    ]
}

DEFAULT_VARIANTS = ("bigint", "uuid4", "comb", "uuid4-char36", "comb-char36")
#: The variants of the report's insert table.
REPORT_VARIANTS = ("bigint", "uuid4", "comb", "uuid7", "snowflake", "bit-reversed")


@dataclass
class Result:
    """What one variant measured."""

    variant: str
    column_type: str
    rows: int
    seconds: float
    size_bytes: int | None


def _size(conn: sa.Connection, table: sa.Table) -> int | None:
    name = backend(conn.engine)
    if name == "postgresql":
        conn.execute(sa.text(f"VACUUM ANALYZE {table.name}").execution_options())
        return int(conn.scalar(sa.text("SELECT pg_total_relation_size(:t)"), {"t": table.name}))
    if name in ("mysql", "mariadb"):
        conn.execute(sa.text(f"ANALYZE TABLE {table.name}"))
        value = conn.scalar(
            sa.text(
                "SELECT data_length + index_length FROM information_schema.tables "
                "WHERE table_schema = DATABASE() AND table_name = :t"
            ),
            {"t": table.name},
        )
        return None if value is None else int(value)
    if name == "sqlite":
        return _sqlite_size(conn, table)
    return None


def _sqlite_size(conn: sa.Connection, table: sa.Table) -> int | None:
    """Bytes of the table and its indexes: from ``dbstat`` where compiled in, else the pages used.

    Without ``dbstat`` the pages in use (``page_count - freelist_count``) also
    count the schema: a few pages, next to a table of thousands.
    """
    try:
        value = conn.scalar(
            sa.text(
                "SELECT SUM(pgsize) FROM dbstat WHERE name IN "
                "(SELECT name FROM sqlite_master WHERE tbl_name = :t)"
            ),
            {"t": table.name},
        )
    except sa.exc.OperationalError:
        value = None
    if value is not None:
        return int(value)
    pages = conn.scalar(sa.text("PRAGMA page_count"))
    free = conn.scalar(sa.text("PRAGMA freelist_count"))
    size = conn.scalar(sa.text("PRAGMA page_size"))
    return None if pages is None or size is None else (int(pages) - int(free or 0)) * int(size)


def run_variant(
    engine: sa.Engine,
    variant: Variant,
    rows: int,
    batch: int = 1000,
    progress: Callable[[int], None] | None = None,
    prefix: str = "seqkeys_bench",
) -> Result:
    """Insert ``rows`` rows keyed by ``variant`` into a fresh table; time the inserts.

    The table, ``{prefix}_{variant}``, is dropped before and after.
    """
    md = sa.MetaData()
    table = sa.Table(
        f"{prefix}_{variant.name.replace('-', '_')}",
        md,
        sa.Column(
            "id",
            variant.key_type(),
            primary_key=True,
            default=variant.make_default(),
            autoincrement=False,
        ),
        sa.Column("payload", sa.String(100), nullable=False),
    )
    md.drop_all(engine)
    md.create_all(engine)
    params = [{"payload": PAYLOAD}] * batch
    insert = table.insert()
    done = 0
    start = time.perf_counter()
    while done < rows:
        n = min(batch, rows - done)
        with engine.begin() as conn:
            conn.execute(insert, params[:n])
        done += n
        if progress is not None:
            progress(done)
    seconds = time.perf_counter() - start
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        size = _size(conn, table)
        column_type = str(table.c.id.type.compile(dialect=engine.dialect))
    md.drop_all(engine)
    return Result(variant.name, column_type, rows, seconds, size)


def results_table(
    results: Sequence[Result], *, baseline: str | None = None, code: bool = False
) -> Table:
    """One row a variant: time and size, absolute and as ratios to ``bigint`` (else the first).

    ``baseline`` names the baseline in the header (default: its variant name);
    ``code=True`` sets the column types in Markdown code spans.

    Example::

        print(format_table(results_table(results)))
    """
    base = next((r for r in results if r.variant == "bigint"), results[0])
    name = baseline or base.variant
    table = Table(
        [
            "key",
            "column",
            "rows",
            "seconds",
            "rows/s",
            f"time vs {name}",
            "size MiB",
            f"size vs {name}",
        ]
    )
    for r in results:
        table.add(
            r.variant,
            f"`{r.column_type}`" if code else r.column_type,
            f"{r.rows:,}",
            f"{r.seconds:,.1f}",
            f"{r.rows / r.seconds:,.0f}",
            ratio(r.seconds, base.seconds),
            "-" if r.size_bytes is None else f"{r.size_bytes / 2**20:,.1f}",
            ratio(r.size_bytes, base.size_bytes),
        )
    return table


def render(results: Iterable[Result], url: str) -> str:
    """The report: one row a variant, time and size as ratios to ``bigint``."""
    results = list(results)
    table = results_table(results)
    lines = [
        f"insert benchmark on {masked(url)}",
        format_table(table),
    ]
    by_name = {r.variant: r for r in results}
    if "comb" in by_name and "bigint" in by_name:
        lines.append(
            f"\ncomb / bigint = {by_name['comb'].seconds / by_name['bigint'].seconds:.2f}x"
        )
    for random_name in ("uuid4", "uuid4-char36"):
        if "comb" in by_name and random_name in by_name:
            lines.append(
                f"{random_name} / comb = "
                f"{by_name[random_name].seconds / by_name['comb'].seconds:.2f}x"
            )
    return "\n".join(lines)


def bench_engine(url: str) -> sa.Engine:
    """An engine for the insert benchmark (on Spanner: multi-row INSERTs of at most 950 values).

    Example::

        engine = bench_engine("postgresql+psycopg://postgres@127.0.0.1/test")
    """
    # Spanner's executemany without RETURNING would otherwise go through batch DML,
    # far slower on the emulator.
    return configure_for_spanner(sa.create_engine(url), fast_executemany=True)


def measure(
    url: str,
    rows: int,
    batch: int = 1000,
    variants: Iterable[str] = DEFAULT_VARIANTS,
    repeat: int = 1,
    settle: float = 3.0,
    progress: Callable[[str, int, int], None] | None = None,
    prefix: str = "seqkeys_bench",
) -> list[Result]:
    """Run the named variants on ``url``; each one's fastest round, in the order named.

    With ``repeat`` > 1 the variants run in interleaved rounds and each keeps
    its fastest round, which damps the noise of a shared machine.
    ``progress(variant, rows_done, rows)`` is called after every batch.

    Example::

        results = measure("sqlite:///bench.db", 10_000, variants=["bigint", "comb"])
        results[1].seconds / results[0].seconds    # COMB's time relative to BIGINT
    """
    engine = bench_engine(url)
    names = list(variants)
    best: dict[str, Result] = {}
    try:
        for _ in range(repeat):
            for name in names:

                def step(done: int, name: str = name) -> None:
                    if progress is not None:
                        progress(name, done, rows)

                result = run_variant(engine, VARIANTS[name], rows, batch, step, prefix)
                # Let the server finish dropping the last table (InnoDB purges in
                # the background) before the next variant is timed.
                time.sleep(settle)
                if name not in best or result.seconds < best[name].seconds:
                    best[name] = result
    finally:
        engine.dispose()
    return [best[name] for name in names]


_INTRO = """\
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

#: What the COMB GUID article (and an earlier run of this benchmark) say, per engine.
PUBLISHED = {
    "postgresql": "COMB GUID article: COMB as string almost 2x faster than random "
    "(uuid4 / COMB ~2x); an earlier run of this benchmark: uuid4 1.41x, COMB 1.23x",
    "mysql": "COMB GUID article (MySQL `char(36)`): very slow with random GUIDs (no figure); "
    "earlier run: uuid4 3.83x, COMB 1.37x",
    "sqlite": "COMB GUID article: either layout works (no figure)",
    "spanner": "not in the COMB GUID article (Spanner's schema design best practices: "
    "no monotonic key first)",
}


@dataclass
class InsertReport:
    """The report's part: :data:`REPORT_VARIANTS` on each engine, tables, plot and findings.

    Example::

        part = InsertReport(targets, rows=100_000, spanner_rows=5_000)
        part.measure(targets[0], settle=1.0)
        print("\\n".join(part.markdown(plot=None)))
    """

    targets: list[Target]
    rows: int
    spanner_rows: int
    repeat: int = 1
    results: dict[str, list[Result]] = field(default_factory=dict)
    plot_name = "insert"

    @property
    def measured(self) -> bool:
        """Whether there is anything to show."""
        return any(self.results.values())

    def measure(
        self,
        target: Target,
        *,
        settle: float,
        progress: Callable[[str, int, int], None] | None = None,
        prefix: str = "seqkeys_report",
    ) -> None:
        """Run the report's variants on ``target`` (in tables named ``{prefix}_...``)."""
        rows = self.spanner_rows if target.key == "spanner" else self.rows
        self.results[target.key] = measure(
            target.url,
            rows,
            variants=REPORT_VARIANTS,
            settle=settle,
            repeat=self.repeat,
            progress=progress,
            prefix=prefix,
        )

    def markdown(self, plot: str | None) -> list[str]:
        """The section: how, one table per engine, the article's numbers beside, the plot."""
        rounds = f"Best of {self.repeat} interleaved rounds per key. " if self.repeat > 1 else ""
        lines = [HEADING, "", _INTRO.format(rows=f"{self.rows:,}", rounds=rounds)]
        summary = Table(
            ["engine", "COMB vs BIGINT", "uuid4 vs BIGINT", "uuid4 / COMB", "published"]
        )
        for target in self.targets:
            results = self.results.get(target.key)
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
            lines += [format_markdown(results_table(results, baseline="BIGINT", code=True)), ""]
            by = {r.variant: r for r in results}
            if {"bigint", "comb", "uuid4"} <= by.keys():
                summary.add(
                    target.label,
                    ratio(by["comb"].seconds, by["bigint"].seconds),
                    ratio(by["uuid4"].seconds, by["bigint"].seconds),
                    ratio(by["uuid4"].seconds, by["comb"].seconds),
                    PUBLISHED.get(target.key, "-"),
                )
        summary.add(
            "SQL Server (COMB GUID article only)",
            "1.08x (AtEnd)",
            "-",
            "-",
            "COMB GUID article: within 8.4% of int",
        )
        lines += [
            "### Beside the COMB GUID article's numbers\n",
            "The COMB GUID article inserted 2 million rows of a GUID and 100 characters per "
            "engine; it gives ratios for SQL Server and PostgreSQL only.\n",
            format_markdown(summary),
            "",
        ]
        if plot:
            lines.append(f"![insert time and size relative to BIGINT]({plot})\n")
        return lines

    def findings(self) -> list[str]:
        """Per engine: COMB and uuid4 against BIGINT, beside what the COMB GUID article saw."""
        bullets = []
        for target in self.targets:
            by = {r.variant: r for r in self.results.get(target.key, [])}
            if not {"bigint", "uuid4", "comb"} <= by.keys():
                continue
            random_over_comb = by["uuid4"].seconds / by["comb"].seconds
            text = (
                f"{target.label}: COMB {by['comb'].seconds / by['bigint'].seconds:.2f}x BIGINT, "
                f"uuid4 {by['uuid4'].seconds / by['bigint'].seconds:.2f}x BIGINT, so random keys "
                f"took {random_over_comb:.2f}x the COMB time"
            )
            if target.key == "postgresql":
                text += " (the COMB GUID article: almost 2x)"
                if random_over_comb < 1.5:
                    text += (
                        f". Not reproduced: here the whole index of {by['uuid4'].rows:,} random "
                        "`uuid` keys stays in memory, so a random insert costs little more than "
                        "an ordered one; the article's gap needs an index larger than its cache"
                    )
            elif target.key == "mysql":
                verdict = "reproduced" if random_over_comb >= 2 else "not clearly, at this size"
                text += f" (the COMB GUID article: MySQL 'very slow' with random GUIDs; {verdict})"
            elif target.key == "spanner":
                text += (
                    " (the emulator keeps everything in memory and has no page splits: it "
                    "cannot show what key order costs on Spanner)"
                )
            if "bit-reversed" in by and target.key != "spanner":
                text += (
                    ". Bit-reversed keys, which spread Spanner's writes, are random to a B-tree: "
                    f"{by['bit-reversed'].seconds / by['bigint'].seconds:.2f}x BIGINT"
                )
            bullets.append(text + ".")
        return bullets

    def plot(self, path: Path) -> None:
        """Bars of insert time and size relative to BIGINT, per engine, to ``path`` (PNG)."""
        from matplotlib.figure import Figure

        targets = [t for t in self.targets if self.results.get(t.key)]
        variants = list(dict.fromkeys(r.variant for t in targets for r in self.results[t.key]))
        fig = Figure(figsize=(11, 4), layout="constrained")
        time_ax, size_ax = fig.subplots(1, 2)
        width = 0.8 / max(len(targets), 1)
        for index, target in enumerate(targets):
            by = {r.variant: r for r in self.results[target.key]}
            base = by.get("bigint")
            if base is None:
                continue
            xs = [i - 0.4 + width * (index + 0.5) for i in range(len(variants))]
            times = [by[v].seconds / base.seconds if v in by else 0.0 for v in variants]
            time_ax.bar(xs, times, width=width, label=target.label)
            sizes = [_size_ratio(by.get(v), base) for v in variants]
            if any(sizes):
                size_ax.bar(xs, sizes, width=width, label=target.label)
        for ax, what in ((time_ax, "insert time"), (size_ax, "table + index size")):
            ax.axhline(1.0, color="black", linewidth=0.8)
            ax.set_xticks(range(len(variants)), variants, fontsize=8)
            ax.set_ylabel(f"{what} vs BIGINT", fontsize=8)
            ax.set_title(f"{what} relative to a BIGINT key", fontsize=9)
            if ax.get_legend_handles_labels()[0]:  # the emulator reports no sizes
                ax.legend(fontsize=7)
        fig.suptitle(f"Inserts of {self.rows:,} rows per key (Spanner emulator: fewer)")
        fig.savefig(path, dpi=80)


def _size_ratio(result: Result | None, base: Result) -> float:
    if result is None or result.size_bytes is None or not base.size_bytes:
        return 0.0
    return result.size_bytes / base.size_bytes


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``python -m benchmarks insert``."""
    parser.add_argument("--url", required=True, help="database URL to insert into")
    parser.add_argument("--rows", type=int, default=100_000, help="rows per variant")
    parser.add_argument("--batch", type=int, default=1000, help="rows per INSERT and transaction")
    parser.add_argument(
        "--repeat", type=int, default=1, help="interleaved rounds; each variant keeps its best"
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=3.0,
        help="seconds to wait after each variant, for the server's background work",
    )
    parser.add_argument(
        "--variants",
        default=",".join(DEFAULT_VARIANTS),
        help=f"comma-separated, from: {', '.join(VARIANTS)}",
    )
    parser.add_argument("--plot", metavar="FILE", help="also draw time and size ratios (PNG)")


def main(args: argparse.Namespace) -> int:
    """Run the variants named on the command line and print the table."""
    names = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        print(
            f"unknown variant(s) {', '.join(unknown)}; choose from {', '.join(VARIANTS)}",
            file=sys.stderr,
        )
        return 2
    step = max(args.rows // 10, args.batch)

    def progress(name: str, done: int, total: int) -> None:
        if done % step == 0 or done == total:
            print(f"  {name}: {done:,}/{total:,} rows", flush=True)

    results = measure(
        args.url, args.rows, args.batch, names, args.repeat, args.settle, progress=progress
    )
    print(render(results, args.url))
    if args.repeat > 1:
        print(f"(best of {args.repeat} interleaved rounds per variant)")
    if args.plot:
        target = Target("cli", masked(args.url), args.url, masked(args.url))
        part = InsertReport([target], args.rows, args.rows, args.repeat, {"cli": results})
        return write_plot(part.plot, args.plot)
    return 0
