"""``seqkeys alembic-init`` where files already are: a non-empty DIRECTORY (``.`` in a
project among them) is refused before anything is created, and a failure part-way removes
only what the command created. Every file there before is there after, unchanged.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sqlalchemy_seqkeys.cli import _Made, main

pytest.importorskip("alembic")


def _snapshot(root: Path) -> dict[str, str | None]:
    """Every entry under ``root``: a file's (or symlink's) content or target, None for a dir."""
    found: dict[str, str | None] = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        if path.is_symlink():
            found[key] = "-> " + os.readlink(path)
        elif path.is_dir():
            found[key] = None
        else:
            found[key] = path.read_text()
    return found


def _project(root: Path) -> dict[str, str | None]:
    (root / "migrations" / "versions").mkdir(parents=True)
    (root / "migrations" / "env.py").write_text("precious env\n")
    (root / "migrations" / "versions" / "0001_init.py").write_text("precious revision\n")
    (root / "myapp").mkdir()
    (root / "myapp" / "models.py").write_text("code\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "README.md").write_text("readme\n")
    (root / "alembic.ini").write_text("[alembic]\n")
    return _snapshot(root)


def test_a_non_empty_directory_is_refused_and_left_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _project(tmp_path)
    migrations = tmp_path / "migrations"
    ini = tmp_path / "alembic.ini"
    assert main(["alembic-init", str(migrations), "--ini", str(ini)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("seqkeys alembic-init: "), captured.err
    assert f"{migrations} is not empty" in captured.err, captured.err
    assert "nothing was created" in captured.err, captured.err
    assert _snapshot(tmp_path) == before


def test_a_non_empty_directory_with_a_new_ini_creates_no_ini(tmp_path: Path) -> None:
    before = _project(tmp_path)
    ini = tmp_path / "new.ini"
    assert main(["alembic-init", str(tmp_path / "myapp"), "--ini", str(ini)]) == 2
    assert _snapshot(tmp_path) == before


def test_dot_in_a_project_is_refused_and_deletes_nothing(tmp_path: Path) -> None:
    """``seqkeys alembic-init .`` in a project root: it deleted every file, .git among them."""
    before = _project(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "sqlalchemy_seqkeys", "alembic-init", ".", "--ini", "alembic.ini"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert ". is not empty" in result.stderr, result.stderr
    assert _snapshot(tmp_path) == before


def test_an_empty_existing_directory_is_used(tmp_path: Path) -> None:
    (tmp_path / "migrations").mkdir()
    (tmp_path / "README.md").write_text("readme\n")
    ini = tmp_path / "alembic.ini"
    assert main(["alembic-init", str(tmp_path / "migrations"), "--ini", str(ini)]) == 0
    assert (tmp_path / "migrations" / "env.py").is_file()
    assert (tmp_path / "README.md").read_text() == "readme\n"


def test_a_failure_part_way_removes_only_what_it_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ini is a dangling symlink into a missing directory: Alembic writes the migrations
    directory, then fails writing the ini; the user's files, the symlink among them, stay."""
    before = _project(tmp_path)
    ini = tmp_path / "link.ini"
    ini.symlink_to(tmp_path / "no-such-dir" / "alembic.ini")
    before = _snapshot(tmp_path)
    new = tmp_path / "new" / "deeper" / "migrations"
    assert main(["alembic-init", str(new), "--ini", str(ini)]) == 1
    err = capsys.readouterr().err
    assert "nothing was created" in err, err
    assert "Traceback" not in err, err
    assert _snapshot(tmp_path) == before  # "new" and its parents are gone too


def test_a_dangling_symlink_directory_is_left_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "migrations").symlink_to(tmp_path / "gone")
    before = _snapshot(tmp_path)
    ini = tmp_path / "alembic.ini"
    assert main(["alembic-init", str(tmp_path / "migrations"), "--ini", str(ini)]) == 1
    err = capsys.readouterr().err
    assert "nothing was created" in err, err
    assert "Traceback" not in err, err
    assert _snapshot(tmp_path) == before


def test_undo_removes_only_the_entries_made_after_it_looked(tmp_path: Path) -> None:
    """What the directory held when the command looked is never removed, even where it
    was filled after the emptiness check (another process): only what came after is."""
    directory = tmp_path / "migrations"
    directory.mkdir()
    (directory / "theirs.py").write_text("theirs\n")
    made = _Made(directory, tmp_path / "alembic.ini")
    (directory / "versions").mkdir()
    (directory / "versions" / "x.py").write_text("x\n")
    (directory / "env.py").write_text("env\n")
    (tmp_path / "alembic.ini").write_text("[alembic]\n")
    made.undo()
    assert _snapshot(tmp_path) == {"migrations": None, "migrations/theirs.py": "theirs\n"}
