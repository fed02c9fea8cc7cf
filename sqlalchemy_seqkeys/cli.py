"""The ``seqkeys`` command (also ``python -m sqlalchemy_seqkeys``): ``demo``, ``resync``,
``doctor``, ``alembic-init`` and ``alembic-template``.

Each command, its options and exit statuses, and the page that explains it: the
"The seqkeys command" reference page (docs/reference/cli.md).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlalchemy as sa

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    """A new ``argparse`` parser of the ``seqkeys`` command line, as :func:`main` uses it.

    For tools that check or document command lines without running them (the
    docs' tests parse every ``seqkeys ...`` they show). Parsing runs nothing.

    Example::

        >>> args = parser().parse_args(["resync", "--url", "sqlite:///app.db",
        ...     "--sequence", "invoice_id", "--table", "invoices", "--column", "id"])
        >>> args.command, args.sequences_table
        ('resync', 'sequences')
    """
    command_line = argparse.ArgumentParser(
        prog="seqkeys",
        description="Primary-key strategies for SQLAlchemy: the demo, Alembic, resync and doctor.",
    )
    commands = command_line.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser("demo", help="insert rows with every strategy and decode them")
    demo.add_argument(
        "--url",
        default="sqlite:///seqkeys-demo.db",
        help="database URL (default: %(default)s, an embedded SQLite file)",
    )
    demo.add_argument(
        "--rows", type=_at_least_one, default=3, help="rows per strategy (default: 3)"
    )

    resync = commands.add_parser(
        "resync",
        help="move a table sequence past MAX(column) of a table (after an import), never back",
        description="Move the table sequence's next value to MAX(column) + 1 of the table, "
        "in one atomic UPDATE; a sequence already past the table's keys is left as it is.",
    )
    resync.add_argument("--url", required=True, help="database URL")
    resync.add_argument("--sequence", required=True, help="the table sequence's name")
    resync.add_argument("--table", required=True, help="the table whose keys it hands out")
    resync.add_argument("--column", required=True, help="that table's key column")
    resync.add_argument("--schema", help="the table's schema (default: the connection's)")
    resync.add_argument(
        "--sequences-table",
        default="sequences",
        help="the sequences table (default: %(default)s)",
    )

    doctor = commands.add_parser(
        "doctor",
        help="check every key column of your models against a live database (exit 1 on a problem)",
        description="Check key order in the real column types, sequences behind their tables' "
        "keys or with the wrong INCREMENT BY, the sequences and lease tables, the clocks and "
        "the server's capabilities. Writes nothing but temporary tables; prints each fix.",
    )
    doctor.add_argument("--url", required=True, help="database URL")
    doctor.add_argument(
        "--models", required=True, help="module:attribute of a MetaData or a declarative base"
    )
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")

    init = commands.add_parser(
        "alembic-init", help="create an Alembic project from the seqkeys template"
    )
    init.add_argument("directory", help="the migrations directory to create")
    init.add_argument(
        "--ini", default="alembic.ini", help="where to write alembic.ini (default: ./alembic.ini)"
    )
    commands.add_parser(
        "alembic-template", help="print the template's path, for `alembic init -t PATH DIR`"
    )
    return command_line


def _at_least_one(text: str) -> int:
    """``--rows``: a whole number of 1 or more, else argparse's error (exit 2, the usage)."""
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a whole number of 1 or more")
    return number


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``seqkeys`` command line; returns the process exit status.

    0 on success; 1 when the command failed or ``doctor`` found a problem; 2
    when ``demo``, ``resync`` or ``doctor`` cannot use its ``--url`` (or
    ``doctor`` its ``--models``), or ``alembic-init`` its paths (a directory
    that is not empty among them). A bad command line raises ``SystemExit(2)``
    with argparse's usage message, and ``--help`` ``SystemExit(0)``.

    :param argv: the arguments after the program name, as in
      ``["demo", "--rows", "5"]``; ``None`` (the default) reads ``sys.argv[1:]``.
    """
    if argv is None:
        argv = sys.argv[1:]
    args = parser().parse_args(argv)
    if args.command == "demo":
        return _demo(args)
    if args.command in ("alembic-init", "alembic-template"):
        return _alembic(args)
    if args.command == "doctor":
        return _doctor(args)
    return _resync(args)


def _error(message: str, command: str = "") -> None:
    print(f"seqkeys{' ' if command else ''}{command}: {message}", file=sys.stderr)


#: what a usable --url looks like, for the messages that refuse one
_URL_FORM = "dialect+driver://user:password@host:port/database, the port a number"
_SYNC_DRIVERS = "postgresql+psycopg://, mysql+pymysql://, sqlite:///app.db"


def _engine(url: str, command: str = "", *, existing: bool = False) -> sa.Engine | int:
    """An Engine for ``--url``; or, said on stderr, the exit status 2 when it cannot be used.

    Nothing is connected: a malformed URL, a dialect or driver not installed, or
    an async driver (a sync command would end in MissingGreenlet) is refused here;
    with ``existing``, so is a SQLite file that does not exist (connecting would
    create it, empty); and a SQLite file whose directory does not exist (SQLite
    creates no directory).
    """
    import os

    import sqlalchemy as sa

    from ._urls import sqlite_file

    try:
        engine = sa.create_engine(url)
    except sa.exc.ArgumentError as exc:
        why = f"{exc}; give a URL of the form {_URL_FORM}"
    except ValueError as exc:  # a port, or a query argument the dialect reads, that is no number
        why = f"{exc}; {_value_hint(url)} (the URL's form: {_URL_FORM})"
    except ImportError as exc:  # the dialect's driver is not installed
        why = f"{exc}; install the driver it names"
    else:
        path = sqlite_file(engine.url)
        missing = path if existing and path is not None and not os.path.exists(path) else None
        if engine.dialect.is_async:
            why = (
                f"{engine.url.drivername} is an async driver, and seqkeys runs without an "
                f"event loop; use a sync driver URL, e.g. {_SYNC_DRIVERS}, for the same database"
            )
        elif missing is not None:
            why = (
                f"the SQLite database file {missing} does not exist (connecting would create "
                "an empty one); check the path"
            )
        elif path is not None and (unusable := _sqlite_directory_refused(path)) is not None:
            why = unusable
        else:
            return engine
        engine.dispose()
    _error(f"cannot use --url: {why}", command)
    return 2


def _sqlite_directory_refused(path: str) -> str | None:
    """Why SQLite cannot open or create the database file ``path``: its directory does not
    exist, or is no directory; None when it is there."""
    import os

    directory = os.path.dirname(path)
    if not directory or os.path.isdir(directory):
        return None
    if os.path.exists(directory):
        return f"{directory}, the directory of the SQLite database file {path}, is not a directory"
    return (
        f"the directory {directory} of the SQLite database file {path} does not exist; "
        "create it first, or check the path"
    )


def _value_hint(url: str) -> str:
    """Where the value that is no number sits in ``url``: its port, or a query argument."""
    import sqlalchemy as sa

    try:
        sa.engine.make_url(url).port  # noqa: B018 - parsed for its error
    except ValueError:
        return "check the port"
    return "check the URL's query arguments (a number where the dialect reads one)"


def _connects(engine: sa.Engine, command: str = "") -> int:
    """0 when ``engine`` connects; else the exit status, said on stderr (the engine disposed).

    2 for URL arguments the driver refuses (a DBAPI ProgrammingError, as psycopg's
    "invalid connection option"; SQLAlchemy's ArgumentError; any other exception
    of the driver's connect, such as PyMySQL's TypeError for an unknown keyword or
    its AttributeError for an unknown charset), and for a URL that names no database
    where the connection then has none (MySQL's ``mysql+pymysql://user@host/``:
    ``_urls.no_database``); 1 for a database error (a refused connection, a login
    refused).
    """
    import sqlalchemy as sa

    from ._urls import no_database

    try:
        with engine.connect() as conn:
            missing = no_database(conn)
        if missing is None:
            return 0
        why = missing
    except (sa.exc.ProgrammingError, sa.exc.ArgumentError) as exc:
        orig = exc.orig if isinstance(exc, sa.exc.DBAPIError) else exc
        why = f"the driver refuses its arguments: {orig}"
    except sa.exc.SQLAlchemyError as exc:
        engine.dispose()
        _error(f"{type(exc).__name__}: {exc}", command)
        return 1
    except Exception as exc:  # not a DBAPI error: the driver failed on its arguments
        told = exc if isinstance(exc, (TypeError, ValueError)) else f"{type(exc).__name__}: {exc}"
        why = f"the driver refuses its arguments: {told}"
    engine.dispose()
    _error(f"cannot use --url: {why}", command)
    return 2


def _doctor(args: argparse.Namespace) -> int:
    from .doctor import load_metadata, run_command
    from .errors import SeqKeysError

    try:
        metadata = load_metadata(args.models)
    except SeqKeysError as exc:
        _error(str(exc), "doctor")
        return 2
    engine = _engine(args.url, "doctor", existing=True)
    if isinstance(engine, int):
        return engine
    status = _connects(engine, "doctor")
    if status:
        return status
    return run_command(engine, metadata, args.models, as_json=args.json)


def _demo(args: argparse.Namespace) -> int:
    import sqlalchemy as sa

    from ._urls import shown
    from .demo import run as run_demo
    from .errors import SeqKeysError

    engine = _engine(args.url)
    if isinstance(engine, int):
        return engine
    status = _connects(engine)  # the demo makes its own engine: only checked here
    engine.dispose()
    if status:
        return status
    print(f"seqkeys demo on {shown(engine.url)}")  # the password hidden, in the query too
    try:
        run_demo(args.url, rows=args.rows)
    except (SeqKeysError, sa.exc.SQLAlchemyError) as exc:
        _error(f"demo: {type(exc).__name__}: {exc}")
        return 1
    return 0


def _refuse_init_paths(directory: Path, ini: Path) -> str | None:
    """Why ``alembic-init`` cannot create ``directory`` and ``ini``, checked before it
    creates anything; None when it can try."""
    if directory.exists() and not directory.is_dir():
        return f"{directory} exists and is not a directory; name a new migrations directory"
    if directory.is_dir() and any(directory.iterdir()):
        return (
            f"{directory} is not empty (Alembic writes a project only into a new or empty "
            "directory); name a new migrations directory"
        )
    if ini.is_dir():
        return f"--ini {ini} is a directory; give the path of the alembic.ini to write"
    where = ini.absolute().parent
    if not where.is_dir():
        return (
            f"--ini {ini}: its directory {where} does not exist; create it first, "
            "or give an --ini in an existing directory"
        )
    if "%" in str(where):
        return (
            f"--ini {ini}: its directory {where} has a '%' in its path, and Alembic cannot "
            "read an ini there (it puts that path unescaped where the ini's %(here)s is, and "
            "reads % as interpolation); give an --ini in a directory without '%'"
        )
    return None


class _Made:
    """What ``alembic-init`` creates, removed again when it fails part-way: only that.

    An entry of ``directory`` that was there when it looked, and an ``ini`` that was there,
    are never removed; nor is anything above the first directory of the path it creates.
    """

    def __init__(self, directory: Path, ini: Path) -> None:
        self.directory = directory
        self.ini = ini
        self.had_ini = ini.exists() or ini.is_symlink()
        self.new_root = _first_missing(directory)  # None: the directory exists
        self.before = set(directory.iterdir()) if directory.is_dir() else set()

    def undo(self) -> None:
        import shutil

        if not self.had_ini and self.ini.is_file() and not self.ini.is_symlink():
            self.ini.unlink()
        if self.new_root is not None:  # every entry under it is this command's
            shutil.rmtree(self.new_root, ignore_errors=True)
            return
        if not self.directory.is_dir():
            return
        for child in self.directory.iterdir():
            if child in self.before:
                continue
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)


def _first_missing(directory: Path) -> Path | None:
    """The outermost directory of ``directory``'s path that does not exist (Alembic creates
    it and those under it), or None when ``directory`` exists."""
    import os

    path = Path(os.path.abspath(directory))  # ".." resolved as os.makedirs walks it
    if path.exists() or path.is_symlink():
        return None
    while not path.parent.exists() and path.parent != path:
        path = path.parent
    return path


def _alembic(args: argparse.Namespace) -> int:
    try:
        from alembic import command
        from alembic.config import Config
        from alembic.util import CommandError

        from sqlalchemy_seqkeys.alembic import template_path
    except ImportError:
        print(
            f"seqkeys: {args.command} needs Alembic: pip install 'sqlalchemy-seqkeys[alembic]'",
            file=sys.stderr,
        )
        return 1

    if args.command == "alembic-template":
        print(template_path())
        return 0
    refused = _refuse_init_paths(Path(args.directory), Path(args.ini))
    if refused is not None:
        _error(f"{refused}; nothing was created", "alembic-init")
        return 2
    made = _Made(Path(args.directory), Path(args.ini))
    try:
        command.init(Config(args.ini), args.directory, template=str(template_path()))
    except (CommandError, OSError) as exc:
        made.undo()
        _error(f"{exc}; nothing was created", "alembic-init")
        return 1
    then = "then alembic revision --autogenerate -m init"
    if made.had_ini:  # Alembic leaves an existing ini as it is
        print(
            f"{args.ini} existed and was left as it is: set in its [alembic] section "
            f"script_location = {args.directory.replace('%', '%%')}, sqlalchemy.url, and "
            "seqkeys_target_metadata = module:attribute of your models' MetaData (the "
            f"template's env.py reads it); {then}"
        )
    else:
        print(
            f"edit {args.ini}: sqlalchemy.url and seqkeys_target_metadata (module:attribute "
            f"of your models' MetaData); {then}"
        )
    return 0


def _resync(args: argparse.Namespace) -> int:
    import sqlalchemy as sa

    from sqlalchemy_seqkeys.errors import SeqKeysError
    from sqlalchemy_seqkeys.sequences.resync import resync_table_sequence
    from sqlalchemy_seqkeys.sequences.table import read_next_value

    where = f"{args.schema}.{args.table}" if args.schema else args.table
    engine = _engine(args.url, existing=True)
    if isinstance(engine, int):
        return engine
    status = _connects(engine)
    if status:
        return status
    try:
        with engine.begin() as conn:
            # locked: an allocation committed meanwhile would read as this command's move
            before = read_next_value(conn, args.sequence, table=args.sequences_table, locked=True)
            after = resync_table_sequence(
                conn,
                args.sequence,
                args.table,
                args.column,
                schema=args.schema,
                sequences_table=args.sequences_table,
            )
    except (SeqKeysError, sa.exc.SQLAlchemyError) as exc:
        _error(f"{type(exc).__name__}: {exc}")
        return 1
    finally:
        engine.dispose()
    if before == after:
        print(
            f"sequence {args.sequence!r}: next value {after}, already past "
            f"MAX({where}.{args.column}); left as it was"
        )
    else:
        print(
            f"sequence {args.sequence!r}: next value {after} (was {before}), past "
            f"MAX({where}.{args.column})"
        )
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
