"""The ``seqkeys`` command: what a user runs against their own systems, and nothing else."""

from __future__ import annotations

import argparse
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from sqlalchemy_seqkeys import reverse_bits
from sqlalchemy_seqkeys.cli import main, parser


def test_demo_on_an_embedded_sqlite_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "demo.db"
    assert main(["demo", "--url", f"sqlite:///{db}"]) == 0
    out = capsys.readouterr().out
    assert db.exists()
    for title in ("COMB GUID (new_comb_guid, CombGuid())", "CombGuid(binary=True)", "UUIDv7"):
        assert title in out
    keys = [line.split()[0] for line in out.splitlines() if line.startswith("  ")]
    guids = [uuid.UUID(k) for k in keys if "-" in k]
    numbers = [int(k) for k in keys if "-" not in k]
    assert len(guids) == 12
    assert numbers[9:] == [1, 2, 3] * 4  # four TableSequence modes, three rows each
    assert all(n > 2**50 for n in numbers[:6])  # plain and rotated snowflake ids
    assert numbers[6:9] == sorted(reverse_bits(c) for c in (1, 2, 3))  # bit-reversed
    assert "minted at 20" in out


def test_python_dash_m_lists_the_user_commands_only(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "sqlalchemy_seqkeys", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0
    listed = [
        line.split()[0]
        for line in result.stdout.splitlines()
        if line[:4] == "    " and line[4:5].isalpha()
    ]
    assert listed == ["demo", "resync", "doctor", "alembic-init", "alembic-template"]
    assert "bench" not in result.stdout
    assert "hotspots" not in result.stdout


@pytest.mark.parametrize("gone", ["bench", "hotspots"])
def test_the_benchmarks_are_not_seqkeys_commands(
    gone: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([gone])
    assert exited.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_alembic_template_prints_the_shipped_template() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "sqlalchemy_seqkeys", "alembic-template"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert (Path(result.stdout.strip()) / "env.py").is_file()


def test_the_reference_page_lists_every_command_and_option() -> None:
    """docs/reference/cli.md, "The seqkeys command", names each subcommand and each of its
    options, so a new one cannot go undocumented."""
    page = (Path(__file__).parent.parent / "docs" / "reference" / "cli.md").read_text()
    commands = next(
        action for action in parser()._actions if isinstance(action, argparse._SubParsersAction)
    )
    for name, command in commands.choices.items():
        assert f"`seqkeys {name}" in page, name
        for action in command._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}" in page or f"{option}`" in page, (name, option)


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("raise ValueError('boom in models')", "ValueError: boom in models"),
        ("def broken(:\n", "SyntaxError"),
    ],
)
def test_doctor_a_models_module_that_fails_to_import(
    source: str,
    error: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    module = f"cli_bad_models_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["doctor", "--url", "sqlite://", "--models", f"{module}:metadata"]) == 2
    err = capsys.readouterr().err
    assert f"cannot load --models {module}:metadata" in err, err
    assert error in err, err
    assert "Traceback" not in err


def test_doctor_refuses_a_sqlite_file_that_does_not_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """It changes nothing: connecting would create an empty database file."""
    module = f"cli_models_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text("import sqlalchemy as sa\nmetadata = sa.MetaData()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    models = f"{module}:metadata"
    # :memory: passes the file check; these models then hold no key column to check
    assert main(["doctor", "--url", "sqlite://", "--models", models]) == 2
    err = capsys.readouterr().err
    assert "holds no key column" in err, err
    assert "does not exist" not in err, err
    missing = tmp_path / "no-such.db"
    assert main(["doctor", "--url", f"sqlite:///{missing}", "--models", models]) == 2
    assert not missing.exists()
    err = capsys.readouterr().err
    assert str(missing) in err, err
    assert "does not exist" in err, err
