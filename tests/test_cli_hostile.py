"""``seqkeys resync`` given what it cannot use: a key column of text, a SQLite file that does
not exist. A refusal that names the problem and the exit status of a SeqKeysError or of a bad
``--url``, never a traceback, a wrong answer or a new empty file.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from sqlalchemy_seqkeys.cli import main


def _database(path: Path, *keys: str) -> list[str]:
    """A SQLite file with sequence 'big' at 5 and table txt(id VARCHAR) holding ``keys``."""
    with sqlite3.connect(path) as conn:
        conn.executescript(
            "CREATE TABLE sequences (name VARCHAR(64) PRIMARY KEY, next_value BIGINT NOT NULL);"
            "INSERT INTO sequences VALUES ('big', 5);"
            "CREATE TABLE txt (id VARCHAR(20) PRIMARY KEY);"
        )
        conn.executemany("INSERT INTO txt VALUES (?)", [(k,) for k in keys])
    conn.close()
    url = f"sqlite:///{path}"
    return ["resync", "--url", url, "--sequence", "big", "--table", "txt", "--column", "id"]


def _next_value(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        (value,) = conn.execute("SELECT next_value FROM sequences").fetchone()
    conn.close()
    return int(value)


@pytest.mark.parametrize(
    "keys",
    [
        ("999", "abc"),  # was: ValueError: invalid literal for int(), a traceback
        ("999", "42"),  # was: exit 0, "already past MAX" (the text MAX '999' > 5 as text)
        ("999", "1000"),
    ],
)
def test_resync_refuses_a_text_key_column(
    keys: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "text.db"
    assert main(_database(path, *keys)) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(
        f"seqkeys: InvalidSequenceError: column 'id' of table 'txt' holds {max(keys)!r} (str), "
        "not an integer"
    ), captured.err
    assert "sequence 'big'" in captured.err
    assert _next_value(path) == 5


def test_resync_of_a_text_key_column_prints_no_traceback(tmp_path: Path) -> None:
    path = tmp_path / "text.db"
    result = subprocess.run(
        [sys.executable, "-m", "sqlalchemy_seqkeys", *_database(path, "999", "abc")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "InvalidSequenceError" in result.stderr
    assert "column 'id' of table 'txt'" in result.stderr


@pytest.mark.parametrize("where", ["no-such.db", "no-such-dir/app.db"])
def test_resync_refuses_a_sqlite_file_that_does_not_exist(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As doctor: connecting would create an empty database file."""
    missing = tmp_path / where
    args = ["resync", "--url", f"sqlite:///{missing}", "--sequence", "s"]
    assert main([*args, "--table", "t", "--column", "id"]) == 2
    assert not missing.exists()
    err = capsys.readouterr().err
    assert err == (
        f"seqkeys: cannot use --url: the SQLite database file {missing} does not exist "
        "(connecting would create an empty one); check the path\n"
    )


def test_doctor_and_resync_refuse_the_same_missing_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = f"cli_hostile_models_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text("import sqlalchemy as sa\nmetadata = sa.MetaData()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    missing = tmp_path / "gone.db"
    url = f"sqlite:///{missing}"
    assert main(["doctor", "--url", url, "--models", f"{module}:metadata"]) == 2
    doctor_err = capsys.readouterr().err
    resync = ["resync", "--url", url, "--sequence", "s", "--table", "t", "--column", "id"]
    assert main(resync) == 2
    resync_err = capsys.readouterr().err
    assert not missing.exists()
    assert doctor_err.removeprefix("seqkeys doctor: ") == resync_err.removeprefix("seqkeys: ")


def test_resync_on_an_in_memory_database_is_not_refused_as_a_missing_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No file to miss: it connects, and says the sequences table is missing."""
    args = ["resync", "--url", "sqlite://", "--sequence", "s", "--table", "t", "--column", "id"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "SequencesTableNotFoundError" in err, err
    assert "does not exist (connecting" not in err
