"""A throw-away Spanner emulator database for ``seqkeys bench report``.

Uses the emulator at ``$SPANNER_EMULATOR_HOST`` when set, or starts the
``emulator_main`` binary of the Debian package
``google-cloud-cli-spanner-emulator`` on a free loopback port; then creates an
instance and a database through google-cloud-spanner's admin API (the
``spanner`` extra) and gives their SQLAlchemy URL. Everything it created is
removed on exit::

    with EmulatorDatabase() as url:
        engine = sqlalchemy.create_engine(url)
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from types import TracebackType
from typing import Any

from sqlalchemy_seqkeys.errors import MissingExtraError

__all__ = ["EMULATOR_HOST_ENV", "EmulatorDatabase", "find_emulator_binary"]

EMULATOR_HOST_ENV = "SPANNER_EMULATOR_HOST"
_DEB_PATH = "/usr/lib/google-cloud-sdk/bin/cloud_spanner_emulator/emulator_main"
_PROJECT = "seqkeys-bench"


def find_emulator_binary() -> str | None:
    """The path of ``emulator_main`` (``$SPANNER_EMULATOR_BIN``, the Debian path, PATH), or None.

    Example::

        find_emulator_binary()   # '/usr/lib/google-cloud-sdk/bin/cloud_spanner_emulator/...'
    """
    override = os.environ.get("SPANNER_EMULATOR_BIN")
    if override:
        return override if os.access(override, os.X_OK) else shutil.which(override)
    if os.access(_DEB_PATH, os.X_OK):
        return _DEB_PATH
    return shutil.which("emulator_main")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class EmulatorDatabase:
    """Context manager: an emulator (reused or started here), a fresh instance and database.

    While it is active ``SPANNER_EMULATOR_HOST`` names the emulator, so
    engines built from the URL it returns reach it.

    Example::

        with EmulatorDatabase(start=True) as url:
            print(url)   # spanner+spanner:///projects/seqkeys-bench/instances/.../databases/...
    """

    def __init__(self, *, start: bool = False, startup_timeout: float = 30.0) -> None:
        """``start``: launch ``emulator_main`` even when ``SPANNER_EMULATOR_HOST`` is unset."""
        self.start = start
        self.startup_timeout = startup_timeout
        self.started_here = False
        self._proc: subprocess.Popen[bytes] | None = None
        self._logdir: str | None = None
        self._saved_host: str | None = None
        self._instance: Any = None
        self._client: Any = None

    def __enter__(self) -> str:
        """Start or attach, create the instance and database; return the SQLAlchemy URL."""
        try:
            from google.api_core import exceptions as gexc
            from google.cloud import spanner
        except ImportError:
            raise MissingExtraError(
                "the Spanner emulator needs google-cloud-spanner and sqlalchemy-spanner: "
                "pip install 'sqlalchemy-seqkeys[spanner]'"
            ) from None
        self._saved_host = os.environ.get(EMULATOR_HOST_ENV)
        try:
            if not self._saved_host:
                self._launch()
            os.environ.setdefault("SPANNER_DISABLE_BUILTIN_METRICS", "true")
            self._client = spanner.Client(project=_PROJECT)
            name = f"bench-{uuid.uuid4().hex[:10]}"
            instance = self._client.instance(
                name,
                configuration_name=f"projects/{_PROJECT}/instanceConfigs/emulator-config",
                display_name=name,
                node_count=1,
            )
            deadline = time.monotonic() + self.startup_timeout
            while True:  # the port can be open before gRPC serves
                try:
                    instance.create().result(timeout=60)
                    break
                except (gexc.ServiceUnavailable, gexc.DeadlineExceeded, gexc.RetryError):
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            self._instance = instance
            database = f"db_{uuid.uuid4().hex[:10]}"
            instance.database(database).create().result(timeout=60)
        except BaseException:
            self._stop()
            raise
        return f"spanner+spanner:///projects/{_PROJECT}/instances/{name}/databases/{database}"

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Delete the instance (and its database), stop an emulator started here."""
        self._stop()

    def _launch(self) -> None:
        if not self.start:
            raise RuntimeError(f"{EMULATOR_HOST_ENV} is not set and starting was not asked for")
        binary = find_emulator_binary()
        if binary is None:
            raise RuntimeError(
                "emulator_main not found: install google-cloud-cli-spanner-emulator "
                f"or set {EMULATOR_HOST_ENV}"
            )
        port = _free_port()
        self._logdir = tempfile.mkdtemp(prefix="seqkeys-emulator-")
        prefix: list[str] = []
        setpriv = shutil.which("setpriv")
        if setpriv is not None:  # the emulator dies with this process
            prefix = [setpriv, "--pdeathsig", "TERM", "--"]
        with Path(self._logdir, "emulator.log").open("wb") as log:
            self._proc = subprocess.Popen(
                [*prefix, binary, f"--host_port=127.0.0.1:{port}"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.started_here = True
        os.environ[EMULATOR_HOST_ENV] = f"127.0.0.1:{port}"
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if self._proc.poll() is not None:
                raise RuntimeError(f"emulator_main exited with code {self._proc.returncode}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"emulator_main did not listen on port {port}")
            time.sleep(0.05)

    def _stop(self) -> None:
        instance, self._instance = self._instance, None
        if instance is not None:
            with contextlib.suppress(Exception):
                instance.delete()
        self._client = None
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if self.started_here:
            if self._saved_host is None:
                os.environ.pop(EMULATOR_HOST_ENV, None)
            else:
                os.environ[EMULATOR_HOST_ENV] = self._saved_host
        if self._logdir is not None:
            shutil.rmtree(self._logdir, ignore_errors=True)
            self._logdir = None
