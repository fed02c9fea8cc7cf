"""The ``seqkeys`` command line given arguments it cannot use as they are, through the real
command line (``python -m sqlalchemy_seqkeys``):

- ``alembic-init`` with a ``%`` in DIRECTORY writes it as ``%%`` in the ini (Alembic reads the
  ini with ``%`` interpolation), so the real ``alembic`` commands run on the project; an
  ``--ini`` in a directory whose path holds a ``%`` is refused (Alembic substitutes
  ``%(here)s`` unescaped and cannot read any ini there);
- ``demo --rows`` below 1 is a bad command line (exit 2, argparse's usage);
- ``demo --url sqlite:///nodir/d.db`` (a directory that does not exist) is refused in one line;
- a ``--url`` query value libpq rejects only when connecting (``sslmode=bogus``) exits 1 as a
  database error: psycopg tells it apart from a refused connection by its message only.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

MODELS = """\
import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class Invoice(Base):
    __tablename__ = "invoices"
    id: Mapped[int] = mapped_column(primary_key=True)
"""


def _run(
    *argv: str, cwd: Path, env: dict[str, str] | None = None, module: str = "sqlalchemy_seqkeys"
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *argv],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def _alembic_works(project: Path, ini: str, versions: Path) -> None:
    """Autogenerate a revision, upgrade to it and list the heads with the real ``alembic``."""
    (project / "models.py").write_text(MODELS)
    env = {"SEQKEYS_DATABASE_URL": f"sqlite:///{project / 'app.db'}"}
    for argv in (["revision", "--autogenerate", "-m", "init"], ["upgrade", "head"], ["heads"]):
        result = _run("-c", ini, *argv, cwd=project, env=env, module="alembic")
        assert result.returncode == 0, (argv, result.stderr)
        assert "Traceback" not in result.stderr, result.stderr
    assert [p.name for p in versions.glob("*_init.py")], list(versions.iterdir())


@pytest.mark.parametrize("directory", ["a%b", "a%%b", "m%(here)s"])
def test_alembic_init_with_a_percent_in_the_directory_makes_a_working_project(
    directory: str, tmp_path: Path
) -> None:
    pytest.importorskip("alembic")
    project = tmp_path / "project"
    project.mkdir()
    result = _run("alembic-init", directory, "--ini", "x%y.ini", cwd=project)
    assert result.returncode == 0, result.stderr
    ini = (project / "x%y.ini").read_text()
    escaped = directory.replace("%", "%%")
    assert f"script_location = %(here)s/{escaped}\n" in ini, ini
    _alembic_works(project, "x%y.ini", project / directory / "versions")


def test_alembic_init_with_a_percent_in_an_absolute_directory_makes_a_working_project(
    tmp_path: Path,
) -> None:
    pytest.importorskip("alembic")
    project = tmp_path / "project"
    project.mkdir()
    migrations = tmp_path / "mig%rations"  # outside the ini's directory: written absolute
    result = _run("alembic-init", str(migrations), "--ini", "alembic.ini", cwd=project)
    assert result.returncode == 0, result.stderr
    _alembic_works(project, "alembic.ini", migrations / "versions")


@pytest.mark.parametrize("ini", ["alembic.ini", "../p%q/alembic.ini"])
def test_alembic_init_refuses_an_ini_in_a_directory_with_a_percent(
    ini: str, tmp_path: Path
) -> None:
    pytest.importorskip("alembic")
    project = tmp_path / "p%q"
    project.mkdir()
    result = _run("alembic-init", "migrations", "--ini", ini, cwd=project)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith("seqkeys alembic-init: --ini "), result.stderr
    assert "'%'" in result.stderr, result.stderr
    assert "nothing was created" in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert list(project.iterdir()) == []


@pytest.mark.parametrize("rows", ["0", "-3"])
def test_demo_refuses_rows_below_one(rows: str, tmp_path: Path) -> None:
    result = _run("demo", "--url", f"sqlite:///{tmp_path / 'd.db'}", "--rows", rows, cwd=tmp_path)
    assert result.returncode == 2, result.stdout
    assert result.stdout == ""
    assert result.stderr.startswith("usage: seqkeys demo"), result.stderr
    assert f"seqkeys demo: error: argument --rows: {rows} is not a whole number of 1 or more" in (
        result.stderr
    ), result.stderr
    assert list(tmp_path.iterdir()) == []


def test_demo_refuses_a_sqlite_file_in_a_directory_that_does_not_exist(tmp_path: Path) -> None:
    result = _run("demo", "--url", "sqlite:///nodir/d.db", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr == (
        "seqkeys: cannot use --url: the directory nodir of the SQLite database file nodir/d.db "
        "does not exist; create it first, or check the path\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_demo_refuses_a_sqlite_file_under_a_file(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    url = f"sqlite:///{tmp_path / 'afile' / 'd.db'}"
    result = _run("demo", "--url", url, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "is not a directory" in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr


@pytest.mark.backend
def test_a_query_value_libpq_rejects_when_connecting_is_a_database_error(
    engines: Any, tmp_path: Path
) -> None:
    """libpq checks ``sslmode``'s value only when it connects, and psycopg raises the same
    OperationalError as for a refused connection (its conninfo parser accepts the value):
    exit 1 with the driver's message, as the exit-status table of docs/reference/cli.md says."""
    engines.get("postgresql")
    url = f"{engines.url('postgresql')}?sslmode=bogus"
    result = _run("demo", "--url", url, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith("seqkeys: OperationalError: "), result.stderr
    # psycopg 3.3: 'invalid sslmode value: "bogus"'; 3.1: 'connection is bad: "bogus"'
    assert '"bogus"' in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr


@pytest.mark.parametrize("rows", [0, -3, True, 2.0])
def test_demo_run_from_python_refuses_rows_below_one(rows: object, tmp_path: Path) -> None:
    from sqlalchemy_seqkeys import SeqKeysError, demo

    lines: list[str] = []
    with pytest.raises(SeqKeysError, match=r"rows must be an int >= 1, not .*per strategy"):
        demo.run(f"sqlite:///{tmp_path / 'd.db'}", rows=rows, echo=lines.append)  # type: ignore[arg-type]
    assert lines == []
    assert list(tmp_path.iterdir()) == []  # nothing was touched
