"""``seqkeys`` given arguments it cannot use: a clear message on stderr and the exit status of
docs/reference/cli.md, never a traceback, a driver's warning or a half-made project.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from sqlalchemy_seqkeys.cli import main

RESYNC = ["--sequence", "inv", "--table", "invoices", "--column", "id"]

BAD_URLS = [
    pytest.param("postgresql://x:abc/db", "check the port", id="port-not-a-number"),
    pytest.param(
        "mysql+pymysql://root@127.0.0.1:abc/x", "check the port", id="mysql-port-not-a-number"
    ),
    pytest.param("notaurl", "dialect+driver://", id="not-a-url"),
    pytest.param("nosuchdb://x/y", "nosuchdb", id="unknown-dialect"),
    pytest.param("mysql+pymysql://root@127.0.0.1:1/x?bogus=1", "bogus", id="driver-argument"),
    pytest.param(
        "mysql+pymysql://root@127.0.0.1:3306/x?connect_timeout=abc",
        "check the URL's query arguments",
        id="query-argument-not-a-number",
    ),
]

ASYNC_URLS = [
    pytest.param("sqlite+aiosqlite:///{tmp}/a.db", id="aiosqlite"),
    pytest.param("postgresql+asyncpg://postgres@127.0.0.1:1/x", id="asyncpg"),
]


def _command(name: str, url: str) -> list[str]:
    return ["resync", "--url", url, *RESYNC] if name == "resync" else ["demo", "--url", url]


@pytest.mark.parametrize("command", ["resync", "demo"])
@pytest.mark.parametrize(("url", "named"), BAD_URLS)
def test_a_url_that_cannot_be_used_exits_2(
    command: str, url: str, named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_command(command, url)) == 2
    err = capsys.readouterr().err
    assert "cannot use --url" in err, err
    assert named in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("command", ["resync", "demo"])
@pytest.mark.parametrize("url", ASYNC_URLS)
def test_an_async_driver_is_refused_with_the_sync_one_to_use(
    command: str, url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = url.format(tmp=tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine ... was never awaited" among them
        assert main(_command(command, url)) == 2
    err = capsys.readouterr().err
    assert "async driver" in err, err
    assert "use a sync driver URL, e.g." in err, err
    assert "MissingGreenlet" not in err, err
    assert not (tmp_path / "a.db").exists()


def test_an_async_driver_leaves_no_warning_in_the_process(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/a.db"
    command = [sys.executable, "-W", "default", "-m", "sqlalchemy_seqkeys", "resync"]
    result = subprocess.run(
        [*command, "--url", url, *RESYNC],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert "never awaited" not in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr


def test_the_demo_on_a_server_that_refuses_the_connection_exits_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--url", "postgresql+psycopg://postgres@127.0.0.1:1/x"]) == 1
    err = capsys.readouterr().err
    assert "OperationalError" in err, err
    assert "Traceback" not in err


def test_alembic_init_with_an_ini_in_a_missing_directory_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("alembic")
    migrations = tmp_path / "migrations"
    ini = tmp_path / "no-such-dir" / "alembic.ini"
    assert main(["alembic-init", str(migrations), "--ini", str(ini)]) == 2
    err = capsys.readouterr().err
    assert str(ini.parent) in err, err
    assert "does not exist" in err, err
    assert "Traceback" not in err
    assert not migrations.exists()
    assert not ini.parent.exists()
    # nothing half made: the same command with a usable --ini now succeeds
    good = tmp_path / "alembic.ini"
    assert main(["alembic-init", str(migrations), "--ini", str(good)]) == 0
    assert (migrations / "env.py").is_file()
    assert good.is_file()


def test_alembic_init_with_an_ini_that_is_a_directory_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("alembic")
    migrations = tmp_path / "migrations"
    assert main(["alembic-init", str(migrations), "--ini", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "is a directory" in err, err
    assert not migrations.exists()


def test_alembic_init_into_a_file_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("alembic")
    taken = tmp_path / "migrations"
    taken.write_text("not a directory")
    ini = tmp_path / "alembic.ini"
    assert main(["alembic-init", str(taken), "--ini", str(ini)]) == 2
    err = capsys.readouterr().err
    assert "not a directory" in err, err
    assert "Traceback" not in err
    assert taken.read_text() == "not a directory"
    assert not ini.exists()


def test_alembic_init_with_an_existing_ini_says_it_was_left_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Alembic keeps an existing ini: the command said "edit it" as if from the template."""
    pytest.importorskip("alembic")
    migrations = tmp_path / "migrations"
    ini = tmp_path / "alembic.ini"
    ini.write_text("[alembic]\nscript_location = old_migrations\n")
    assert main(["alembic-init", str(migrations), "--ini", str(ini)]) == 0
    out = capsys.readouterr().out
    assert ini.read_text() == "[alembic]\nscript_location = old_migrations\n"
    assert "left as it is" in out, out
    assert f"script_location = {migrations}" in out, out
    assert "seqkeys_target_metadata" in out, out
    assert (migrations / "env.py").is_file()
