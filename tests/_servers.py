"""Private database servers for tests that must change server-wide state.

The shared MariaDB server must never be changed globally (its time-zone tables
stay as they are), so a test that needs, say, a named time zone starts a server
of its own: ``mariadb-install-db`` into a temporary directory, ``mariadbd`` on
a Unix socket and a free loopback port, the zones loaded into *that* server
with ``mysql_tzinfo_to_sql``. The server is stopped and its directory deleted
when the context ends, also after a failure or an interrupt. If the test
process itself is killed, the kernel stops the server (a parent-death signal,
on Linux) and the next run deletes the directory it left::

    with private_mariadb(zones=["America/New_York"]) as url:
        engine = sa.create_engine(url)

Startup takes about two seconds. ``private_mariadb_url`` is the same as a
session-scoped pytest fixture (import it into a test module to use it).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NoReturn

import pytest

from ._procs import free_port, orphaned_dirs

__all__ = ["MariaDBUnavailableError", "private_mariadb", "private_mariadb_url", "unavailable"]

ZONEINFO = Path("/usr/share/zoneinfo")
PREFIX = "seqkeys-mdb-"
START_TIMEOUT_S = 30.0
#: how many ports a private server tries when the one picked was taken meanwhile
PORT_ATTEMPTS = 5


class MariaDBUnavailableError(RuntimeError):
    """The MariaDB server binaries are not installed, or the server did not start."""


def _binary(*names: str) -> str:
    for name in names:
        path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin")
        if path:
            return path
    raise MariaDBUnavailableError(f"none of {', '.join(names)} is installed")


def _remove_leftovers() -> None:
    """Delete the directories of private servers whose test process is gone."""
    for path in orphaned_dirs(PREFIX):
        shutil.rmtree(path, ignore_errors=True)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    # Linux: SIGTERM to the server when the test process dies, even by SIGKILL.
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _run(args: list[str], **kw: object) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(args, capture_output=True, timeout=120, check=False, **kw)  # type: ignore[call-overload]
    if done.returncode != 0:
        raise MariaDBUnavailableError(
            f"{' '.join(args[:2])} failed ({done.returncode}): {done.stderr.decode()[-2000:]}"
        )
    return done  # type: ignore[no-any-return]


def _start(
    server: str, data: Path, sock: Path, root: Path, port: int, options: Sequence[str]
) -> subprocess.Popen[bytes]:
    args = [
        server,
        "--no-defaults",
        f"--datadir={data}",
        f"--socket={sock}",
        f"--port={port}",
        "--bind-address=127.0.0.1",
        f"--pid-file={root / 'pid'}",
        f"--log-error={root / 'error.log'}",
        "--skip-log-bin",
        "--skip-name-resolve",
        "--innodb-buffer-pool-size=32M",
        "--innodb-flush-log-at-trx-commit=0",
        *options,
    ]
    if os.geteuid() == 0:
        args.append("--user=root")  # mariadbd refuses to run as root otherwise
    return subprocess.Popen(
        args,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=_die_with_parent,  # only prctl, before exec
    )


def _wait_started(process: subprocess.Popen[bytes], base: list[str]) -> bool:
    """True once the server answers on its socket; False if it exited or timed out."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while subprocess.run([*base, "-e", "SELECT 1"], capture_output=True).returncode != 0:
        if process.poll() is not None or time.monotonic() > deadline:
            if process.poll() is None:
                process.kill()
            process.wait()
            return False
        time.sleep(0.1)
    return True


@contextlib.contextmanager
def private_mariadb(zones: Sequence[str] = (), options: Sequence[str] = ()) -> Iterator[str]:
    """Start a throwaway MariaDB server; yield a PyMySQL URL (user root, database ``test``).

    ``zones`` (names under /usr/share/zoneinfo) are loaded into the server's
    time-zone tables. ``options`` are extra ``mariadbd`` options, after (so
    overriding) the defaults, e.g. ``["--innodb-buffer-pool-size=64M"]``. The
    server and its data directory are gone afterwards.
    """
    install = _binary("mariadb-install-db", "mysql_install_db")
    server = _binary("mariadbd", "mysqld")
    client = _binary("mariadb", "mysql")
    tzinfo = _binary("mariadb-tzinfo-to-sql", "mysql_tzinfo_to_sql")
    # Short path: a Unix socket path must fit in 108 bytes.
    _remove_leftovers()
    root = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
    process: subprocess.Popen[bytes] | None = None
    try:
        data, sock = root / "data", root / "sock"
        _run(
            [
                install,
                "--no-defaults",
                f"--datadir={data}",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                f"--user={pwd.getpwuid(os.geteuid()).pw_name}",
            ]
        )
        base = [client, "--no-defaults", f"--socket={sock}", "-uroot"]
        for attempt in range(1, PORT_ATTEMPTS + 1):
            # The port was free when picked; another process may bind it before
            # mariadbd does, which then exits: pick another and start again.
            port = free_port()
            process = _start(server, data, sock, root, port, options)
            if _wait_started(process, base):
                break
            log = (root / "error.log").read_text(errors="replace")[-2000:]
            process = None
            if "Address already in use" not in log or attempt == PORT_ATTEMPTS:
                raise MariaDBUnavailableError(f"the private mariadbd did not start:\n{log}")
        _run([*base, "-e", "CREATE DATABASE test"])
        for zone in zones:
            sql = _run([tzinfo, str(ZONEINFO / zone), zone]).stdout
            _run([*base, "mysql"], input=sql)
        yield f"mysql+pymysql://root@127.0.0.1:{port}/test"
    finally:
        if process is not None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(root, ignore_errors=True)


def unavailable(exc: MariaDBUnavailableError) -> NoReturn:
    """Fail the test under CI (where the server must start), skip it elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(f"private MariaDB server: {exc}", pytrace=False)
    pytest.skip(f"private MariaDB server unavailable: {exc}")


@pytest.fixture(scope="session")
def private_mariadb_url() -> Iterator[str]:
    """A private MariaDB server with the ``America/New_York`` zone loaded (session-wide)."""
    try:
        server = private_mariadb(zones=["America/New_York"])
        url = server.__enter__()
    except MariaDBUnavailableError as exc:
        unavailable(exc)
    try:
        yield url
    finally:
        server.__exit__(None, None, None)
