"""The engines a benchmark runs on: which answer, what server each is, the Spanner emulator.

Example::

    notes: list[str] = []
    with spanner_database(None, quick=True, notes=notes) as spanner:
        targets = find_targets(sqlite=None, postgresql=None, mysql="none", spanner=spanner,
                               workdir=Path("/tmp"), notes=notes)
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

__all__ = [
    "DEFAULT_URLS",
    "Target",
    "backend",
    "configure_for_spanner",
    "find_targets",
    "masked",
    "portable_word",
    "spanner_database",
]

#: The local servers the report uses when they answer.
DEFAULT_URLS = {
    "postgresql": "postgresql+psycopg://postgres@127.0.0.1:5432/test",
    "mysql": "mysql+pymysql://root@127.0.0.1:3306/test",
}

LABELS = {
    "sqlite": "SQLite",
    "postgresql": "PostgreSQL",
    "mysql": "MariaDB/MySQL",
    "spanner": "Spanner emulator",
}

EMULATOR_HOST_ENV = "SPANNER_EMULATOR_HOST"


@dataclass(frozen=True)
class Target:
    """One engine a benchmark runs on: its key (``sqlite``, ``postgresql``, ...), label, URL.

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
        return masked(self.url)


def masked(url: str) -> str:
    """``url`` as a report shows it: its password hidden, a SQLite file by its name alone.

    Where one run kept its SQLite file (a temporary directory) tells a reader nothing
    and cannot be reproduced elsewhere.

    Example::

        >>> masked("postgresql://me:secret@db/app")
        'postgresql://me:***@db/app'
        >>> masked("sqlite:////tmp/seqkeys-report-x1/seqkeys-report.db")
        'sqlite:///seqkeys-report.db'
    """
    parsed = sa.make_url(url)
    database = parsed.database or ""
    if parsed.get_backend_name() == "sqlite" and os.path.isabs(database):
        parsed = parsed.set(database=os.path.basename(database))
    return parsed.render_as_string(hide_password=True)


def portable_word(word: str, cwd: Path | None = None) -> str:
    """A command-line word as a report prints it, for a reader to run again.

    A URL is :func:`masked`; an absolute path (alone or as ``--option=PATH``) becomes
    relative to the working directory ``cwd``, or its file name when outside it.

    Example::

        >>> portable_word("/tmp/x/scale.md", cwd=Path("/home/me/repo"))
        'scale.md'
        >>> portable_word("--out=/home/me/repo/notes/scale.md", cwd=Path("/home/me/repo"))
        '--out=notes/scale.md'
        >>> portable_word("--rows")
        '--rows'
    """
    if "://" in word:
        with contextlib.suppress(Exception):  # not a URL after all
            return masked(word)
        return word
    option, equals, value = word.partition("=") if word.startswith("--") else ("", "", word)
    if not equals:
        option, value = "", word
    if os.path.isabs(value):
        path, base = Path(value), Path.cwd() if cwd is None else cwd
        value = os.path.relpath(path, base) if path.is_relative_to(base) else path.name
    return option + equals + value


def backend(engine: sa.Engine) -> str:
    """``sqlite``, ``postgresql``, ``mysql``, ``mariadb`` or ``spanner``: what ``engine`` runs on.

    Example::

        >>> backend(sa.create_engine("sqlite://"))
        'sqlite'
    """
    return engine.dialect.name.partition("+")[0]  # sqlalchemy-spanner's "spanner+spanner"


def configure_for_spanner(engine: sa.Engine, *, fast_executemany: bool = False) -> sa.Engine:
    """On Spanner, the test suite's engine settings (950 parameters a statement); else as is."""
    if backend(engine) == "spanner":
        from tests._emulator import configure_engine

        configure_engine(engine, fast_executemany=fast_executemany)
    return engine


def _server_version(engine: sa.Engine) -> str:
    """The server's own version text, short."""
    name = backend(engine)
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


def _probe(key: str, url: str) -> Target:
    """Connect to ``url`` and describe it; raises what connecting raised."""
    if key == "spanner":
        from tests._emulator import emulator_version

        return Target(key, LABELS[key], url, emulator_version())
    driver = sa.make_url(url).drivername
    connect_args: dict[str, Any] = {}
    if driver.startswith(("postgresql", "mysql", "mariadb")):
        connect_args["connect_timeout"] = 3
    engine = sa.create_engine(url, connect_args=connect_args)
    try:
        server = _server_version(engine)
    finally:
        engine.dispose()
    label = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}.get(key, server.split()[0])
    return Target(key, label, url, server)


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
    answer raises. ``spanner`` is the URL of an existing database (see
    :func:`spanner_database`).
    """
    targets: list[Target] = []
    given = {"sqlite": sqlite, "postgresql": postgresql, "mysql": mysql, "spanner": spanner}
    for key, url in given.items():
        if url is not None and url.lower() == "none":
            notes.append(f"{LABELS[key]}: skipped (`--{key} none`).")
        elif url is not None:
            targets.append(_probe(key, url))
        elif key == "sqlite":
            targets.append(_probe(key, f"sqlite:///{workdir / 'seqkeys-report.db'}"))
        elif key in DEFAULT_URLS:
            try:
                targets.append(_probe(key, DEFAULT_URLS[key]))
            except Exception as exc:
                notes.append(
                    f"{LABELS[key]}: no server answered at {DEFAULT_URLS[key]} "
                    f"({type(exc).__name__}); skipped. Give `--{key} URL` to run on it."
                )
    return targets


@contextlib.contextmanager
def spanner_database(spanner: str | None, *, quick: bool, notes: list[str]) -> Iterator[str | None]:
    """The Spanner URL to run on: the one given, or a new database on an emulator.

    ``"none"`` skips Spanner; ``"start"`` starts ``emulator_main`` (the test
    suite's harness, ``tests/_emulator.py``) unless ``SPANNER_EMULATOR_HOST``
    names one; ``None`` uses ``SPANNER_EMULATOR_HOST`` when set (not with
    ``quick``). What the harness created is removed on exit.
    """
    if spanner is not None and spanner.lower() == "none":
        notes.append("Spanner emulator: skipped (`--spanner none`).")
        yield None
    elif spanner is not None and spanner.lower() != "start":
        yield spanner
    elif spanner is None and (quick or not os.environ.get(EMULATOR_HOST_ENV)):
        why = "with --quick" if quick else f"{EMULATOR_HOST_ENV} is not set"
        notes.append(
            f"Spanner emulator: not run ({why}); `--spanner start` starts one, "
            "`--spanner URL` uses a database on one."
        )
        yield None
    else:
        from tests._emulator import SpannerEmulator

        with SpannerEmulator(project="seqkeys-bench") as emulator:
            yield emulator.url
