"""Every script in examples/ runs to completion on every engine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.py"))

pytestmark = pytest.mark.backend


def test_there_are_examples() -> None:
    assert EXAMPLES


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script: Path, engine: Engine, tmp_path: Path) -> None:
    url = engine.url.render_as_string(hide_password=False)
    result = subprocess.run(
        [sys.executable, str(script), url],
        cwd=tmp_path,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip(), "an example should show the user something"
