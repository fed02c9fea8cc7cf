"""Cloud Spanner emulator harness for the test suite and the benchmarks.

Starts ``emulator_main`` (or reuses ``SPANNER_EMULATOR_HOST``), creates a
throw-away instance and database through google-cloud-spanner's admin API and
exposes a SQLAlchemy URL for sqlalchemy-spanner.  Only loopback is contacted.

The one harness of the repository: ``tests/conftest.py`` starts it for the
``spanner`` engine, and ``python -m benchmarks report --spanner start`` runs
the benchmarks in a database of its own::

    with SpannerEmulator() as emulator:
        engine = emulator.create_engine()
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._procs import Harness, start_on_a_free_port, tail

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = [
    "DEB_EMULATOR_PATH",
    "DEB_PACKAGE",
    "EMULATOR_HOST_ENV",
    "MAX_QUERY_PARAMETERS",
    "PYTEST_WARNING_FILTERS",
    "EmulatorError",
    "SpannerEmulator",
    "configure_engine",
    "emulator_available",
    "emulator_version",
    "find_emulator_binary",
    "spanner_url",
]

EMULATOR_HOST_ENV = "SPANNER_EMULATOR_HOST"
"""Env var read by google-cloud-spanner to talk to an emulator."""
EMULATOR_BIN_ENV = "SPANNER_EMULATOR_BIN"
"""Env var overriding the emulator binary location."""
DISABLE_METRICS_ENV = "SPANNER_DISABLE_BUILTIN_METRICS"
"""Env var that turns off the client's built-in metrics export."""
DEB_PACKAGE = "google-cloud-cli-spanner-emulator"
"""Debian package shipping the emulator."""
DEB_EMULATOR_PATH = "/usr/lib/google-cloud-sdk/bin/cloud_spanner_emulator/emulator_main"
"""Where the Debian package installs ``emulator_main``."""
EMULATOR_CONFIG = "emulator-config"
"""The only instance config the emulator offers."""
DEFAULT_PROJECT = "seqkeys-test"
"""Project id used unless another is given."""
MAX_QUERY_PARAMETERS = 950
"""Spanner (and the emulator) reject a statement with more bind parameters."""
PYTEST_WARNING_FILTERS = (
    # sqlalchemy-spanner's pool "reset" hook reads a deprecated dbapi property.
    "ignore:This method is deprecated. Use _spanner_transaction_started field:DeprecationWarning",
    # SpannerDialect.do_rollback uses _ConnectionFairy.connection (SADeprecationWarning).
    "ignore:The _ConnectionFairy.connection attribute is deprecated:DeprecationWarning",
    # dbapi rollback()/commit() on an AUTOCOMMIT connection with no transaction.
    "ignore:This method is non-operational as a transaction has not been started:UserWarning",
)
"""``filterwarnings`` entries needed to run sqlalchemy-spanner under ``-W error``."""


class EmulatorError(RuntimeError):
    """The emulator could not be started or set up."""


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _from_dpkg() -> str | None:
    """Ask dpkg where the emulator package put ``emulator_main``."""
    dpkg = shutil.which("dpkg")
    if dpkg is None:
        return None
    try:
        out = subprocess.run(
            [dpkg, "-L", DEB_PACKAGE],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        line = line.strip()
        if line.endswith("/emulator_main") and _executable(line):
            return line
    return None


def find_emulator_binary() -> str | None:
    """Return the path of ``emulator_main``, or None if it is not installed.

    Order: ``$SPANNER_EMULATOR_BIN`` (a path or a name on PATH; if set but
    unusable, None), the Debian path, ``dpkg -L``, then PATH.
    """
    override = os.environ.get(EMULATOR_BIN_ENV)
    if override:
        if _executable(override):
            return os.path.abspath(override)
        return shutil.which(override)
    if _executable(DEB_EMULATOR_PATH):
        return DEB_EMULATOR_PATH
    found = _from_dpkg()
    if found is not None:
        return found
    return shutil.which("emulator_main")


def emulator_available() -> bool:
    """True if an emulator is reachable via env var or can be started."""
    return bool(os.environ.get(EMULATOR_HOST_ENV)) or find_emulator_binary() is not None


def emulator_version() -> str:
    """``Cloud Spanner emulator (google-cloud-cli-spanner-emulator VERSION)``, as dpkg knows it."""
    dpkg = shutil.which("dpkg-query")
    if dpkg is not None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                [dpkg, "-W", "-f", "${Version}", DEB_PACKAGE],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
            if out.returncode == 0 and out.stdout.strip():
                return f"Cloud Spanner emulator ({DEB_PACKAGE} {out.stdout.strip()})"
    return "Cloud Spanner emulator"


def spanner_url(project: str, instance: str, database: str) -> str:
    """Build the sqlalchemy-spanner URL for a database."""
    return f"spanner+spanner:///projects/{project}/instances/{instance}/databases/{database}"


def configure_engine(engine: Engine, *, fast_executemany: bool = False) -> Engine:
    """Make a sqlalchemy-spanner engine usable for bulk ORM inserts.

    Caps insertmanyvalues batches at :data:`MAX_QUERY_PARAMETERS` (the
    default 1000-row pages fail: sqlparse's token limit or Spanner's
    950-parameter limit).  ``fast_executemany`` also routes Core
    ``executemany`` through multi-row INSERTs instead of batch DML, which is
    ~30x faster on the emulator.
    """
    engine.dialect.insertmanyvalues_max_parameters = MAX_QUERY_PARAMETERS
    if fast_executemany:
        engine.dialect.use_insertmanyvalues_wo_returning = True
    return engine


def _tcp_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:12]}"


@contextlib.contextmanager
def _patched_env(values: dict[str, str]) -> Iterator[None]:
    """Set env vars for the duration of the block, then restore them."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


class SpannerEmulator(Harness):
    """Context manager running a Spanner emulator with a fresh instance and DB.

    Reuses ``$SPANNER_EMULATOR_HOST`` when set, otherwise starts
    ``emulator_main`` on a free loopback port.  While active,
    ``SPANNER_EMULATOR_HOST`` is set in ``os.environ`` so engines built from
    :attr:`url` reach the emulator; the environment is restored on exit.
    """

    def __init__(
        self,
        *,
        project: str = DEFAULT_PROJECT,
        binary: str | None = None,
        startup_timeout: float = 30.0,
        extra_args: Sequence[str] = (),
        die_with_parent: bool = True,
    ) -> None:
        """Configure; nothing starts until :meth:`start` or ``with``.

        ``extra_args`` go to ``emulator_main``.  ``die_with_parent`` runs it
        under ``setpriv --pdeathsig TERM`` (when available) so a killed test
        run leaves no emulator behind; the signal fires when the *thread*
        that called :meth:`start` exits, so start it from a long-lived thread.
        """
        self.project = project
        self.instance = _unique("seqkeys-")
        self.database = _unique("db_")
        self.startup_timeout = startup_timeout
        self.extra_args = tuple(extra_args)
        self.die_with_parent = die_with_parent
        self._binary = binary
        self._host: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._logdir: str | None = None
        self._log_path: Path | None = None
        self._env: contextlib.ExitStack | None = None
        self._client: Any = None
        self._instance_obj: Any = None
        self._databases: list[str] = []
        self.startup_seconds = 0.0
        """Wall time spent in :meth:`start` (emulator + instance + DB)."""

    # -- public API ---------------------------------------------------------

    @property
    def host(self) -> str:
        """``HOST:PORT`` of the emulator's gRPC endpoint."""
        if self._host is None:
            raise EmulatorError("emulator not started")
        return self._host

    @property
    def started_here(self) -> bool:
        """True if this object launched the emulator process."""
        return self._proc is not None

    @property
    def url(self) -> str:
        """SQLAlchemy URL of the default database."""
        return spanner_url(self.project, self.instance, self.database)

    def url_for(self, database: str) -> str:
        """SQLAlchemy URL of another database on the same instance."""
        return spanner_url(self.project, self.instance, database)

    def create_engine(
        self, database: str | None = None, *, fast_executemany: bool = False, **kwargs: Any
    ) -> Engine:
        """A configured SQLAlchemy engine; dispose it before :meth:`stop`."""
        import sqlalchemy

        url = self.url_for(database) if database else self.url
        engine = sqlalchemy.create_engine(url, **kwargs)
        return configure_engine(engine, fast_executemany=fast_executemany)

    @property
    def client(self) -> Any:
        """The ``google.cloud.spanner.Client`` bound to the emulator."""
        if self._client is None:
            raise EmulatorError("emulator not started")
        return self._client

    def stderr_tail(self, lines: int = 40) -> str:
        """Last lines of the emulator's output (empty if not started here)."""
        return tail(self._log_path, lines)

    def start(self) -> SpannerEmulator:
        """Start (or attach to) the emulator and create instance + database."""
        if self._env is not None:
            raise EmulatorError("already started")
        began = time.monotonic()
        self._env = contextlib.ExitStack()
        try:
            external = os.environ.get(EMULATOR_HOST_ENV)
            if external:
                self._host = external
            else:
                self._launch()
            self._env.enter_context(
                _patched_env({EMULATOR_HOST_ENV: self.host, DISABLE_METRICS_ENV: "true"})
            )
            self._create_instance()
            self.create_database(self.database)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began
        return self

    def create_database(self, name: str | None = None, ddl: Sequence[str] = ()) -> str:
        """Create a fresh database (optionally with DDL) and return its id."""
        if self._instance_obj is None:
            raise EmulatorError("emulator not started")
        database_id = name or _unique("db_")
        db = self._instance_obj.database(database_id, ddl_statements=list(ddl))
        db.create().result(timeout=60)
        self._databases.append(database_id)
        return database_id

    def drop_database(self, name: str) -> None:
        """Drop a database created on this instance (missing is fine)."""
        from google.api_core import exceptions as gexc

        if self._instance_obj is None:
            return
        with contextlib.suppress(gexc.NotFound):
            self._instance_obj.database(name).drop()
        if name in self._databases:
            self._databases.remove(name)

    def update_ddl(self, statements: Sequence[str], database: str | None = None) -> None:
        """Run DDL statements on a database via the admin API."""
        if self._instance_obj is None:
            raise EmulatorError("emulator not started")
        db = self._instance_obj.database(database or self.database)
        db.update_ddl(list(statements)).result(timeout=60)

    def stop(self) -> None:
        """Drop databases, delete the instance, stop the emulator, restore env."""
        try:
            self._teardown_instance()
        finally:
            self._close_client()
            self._terminate()
            if self._env is not None:
                self._env.close()
                self._env = None
            if self._logdir is not None:
                shutil.rmtree(self._logdir, ignore_errors=True)
                self._logdir = None
                self._log_path = None

    # -- internals ----------------------------------------------------------

    def _launch(self) -> None:
        binary = self._binary or find_emulator_binary()
        if binary is None:
            raise EmulatorError(
                f"emulator_main not found; install {DEB_PACKAGE} "
                f"or set {EMULATOR_BIN_ENV} / {EMULATOR_HOST_ENV}"
            )
        prefix: list[str] = []
        setpriv = shutil.which("setpriv") if self.die_with_parent else None
        if setpriv is not None:
            prefix = [setpriv, "--pdeathsig", "TERM", "--"]
        logdir = self._logdir = tempfile.mkdtemp(prefix="spanner-emulator-")

        def start(port: int, attempt: int) -> subprocess.Popen[bytes]:
            self._host = f"127.0.0.1:{port}"
            self._log_path = Path(logdir, f"emulator-{attempt}.log")
            with self._log_path.open("wb") as log:
                self._proc = subprocess.Popen(
                    [*prefix, binary, f"--host_port={self._host}", *self.extra_args],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            atexit.register(self._terminate)
            return self._proc

        start_on_a_free_port(start, self._wait_tcp, self._terminate, EmulatorError)

    def _wait_tcp(self, port: int) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + self.startup_timeout
        while True:
            code = self._proc.poll()
            if code is not None:
                raise EmulatorError(
                    f"emulator exited with code {code} during startup:\n{self.stderr_tail()}"
                )
            if _tcp_open("127.0.0.1", port):
                return
            if time.monotonic() > deadline:
                raise EmulatorError(
                    f"emulator did not listen on {self._host} within "
                    f"{self.startup_timeout:.0f}s:\n{self.stderr_tail()}"
                )
            time.sleep(0.05)

    def _create_instance(self) -> None:
        from google.api_core import exceptions as gexc
        from google.cloud import spanner

        self._client = spanner.Client(project=self.project)
        config = f"projects/{self.project}/instanceConfigs/{EMULATOR_CONFIG}"
        instance = self._client.instance(
            self.instance, configuration_name=config, display_name=self.instance[:30], node_count=1
        )
        # The port may be open before gRPC serves; retry until the deadline.
        deadline = time.monotonic() + self.startup_timeout
        while True:
            try:
                instance.create().result(timeout=60)
                break
            except (gexc.ServiceUnavailable, gexc.DeadlineExceeded, gexc.RetryError) as err:
                if self._proc is not None and self._proc.poll() is not None:
                    raise EmulatorError(
                        f"emulator died during setup:\n{self.stderr_tail()}"
                    ) from err
                if time.monotonic() > deadline:
                    raise EmulatorError(
                        f"emulator at {self.host} not serving gRPC: {err}\n{self.stderr_tail()}"
                    ) from err
                time.sleep(0.1)
        self._instance_obj = instance

    def _teardown_instance(self) -> None:
        if self._instance_obj is None:
            return
        from google.api_core import exceptions as gexc

        instance, self._instance_obj = self._instance_obj, None
        try:
            for name in list(self._databases):
                with contextlib.suppress(gexc.GoogleAPICallError):
                    instance.database(name).drop()
            self._databases.clear()
            with contextlib.suppress(gexc.NotFound):
                instance.delete()
        except gexc.GoogleAPICallError:
            if self._proc is None:  # external emulator: report leaked instance
                raise

    def _close_client(self) -> None:
        client, self._client = self._client, None
        if client is None:
            return
        for attr in ("_instance_admin_api", "_database_admin_api"):
            api = getattr(client, attr, None)
            transport = getattr(api, "transport", None)
            if transport is not None:
                with contextlib.suppress(Exception):
                    transport.close()

    def _terminate(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            atexit.unregister(self._terminate)
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
