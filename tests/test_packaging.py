"""The wheel carries what an installed user needs: the package, py.typed, the Alembic template."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


@pytest.mark.slow
def test_wheel_ships_the_alembic_template(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("sqlalchemy_seqkeys-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in (
        "sqlalchemy_seqkeys/py.typed",
        "sqlalchemy_seqkeys/alembic/ops.py",
        "sqlalchemy_seqkeys/alembic_templates/seqkeys/README",
        "sqlalchemy_seqkeys/alembic_templates/seqkeys/alembic.ini.mako",
        "sqlalchemy_seqkeys/alembic_templates/seqkeys/env.py",
        "sqlalchemy_seqkeys/alembic_templates/seqkeys/script.py.mako",
    ):
        assert expected in names, expected
