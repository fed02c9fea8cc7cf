"""The wheel is the library: what an installed user needs, no benchmark code, no optional imports.

- The wheel carries the package, ``py.typed`` and the Alembic template, and no
  benchmark (``benchmarks/``, the old ``sqlalchemy_seqkeys/bench``, ``hotspots``).
- Installed from that wheel into a fresh virtual environment with only the
  ``alembic`` extra, ``alembic init -t "$(seqkeys alembic-template)"``,
  autogenerate, upgrade and ``alembic check`` work on SQLite, through the
  ``seqkeys`` Alembic plugin that the wheel's entry point publishes: a
  migration script uses ``op.create_table_sequence`` without importing
  anything of the library, and ``alembic check`` finds a missing sequence row.
- ``import sqlalchemy_seqkeys`` imports nothing beyond SQLAlchemy and its own
  requirements: no Alembic, driver, plotting, Spanner or asyncio module.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).parent.parent
MODELS = ROOT / "tests" / "alembic_project" / "models.py"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("sqlalchemy_seqkeys-*.whl")
    return built


@pytest.mark.slow
def test_wheel_ships_the_alembic_template(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in (
        "sqlalchemy_seqkeys/py.typed",
        "sqlalchemy_seqkeys/cli.py",
        "sqlalchemy_seqkeys/demo.py",
        "sqlalchemy_seqkeys/alembic/ops.py",
        "sqlalchemy_seqkeys/alembic_templates/seqkeys/README",
        "sqlalchemy_seqkeys/alembic_templates/seqkeys/alembic.ini.mako",
        "sqlalchemy_seqkeys/alembic_templates/seqkeys/env.py",
        "sqlalchemy_seqkeys/alembic_templates/seqkeys/script.py.mako",
    ):
        assert expected in names, expected


@pytest.mark.slow
def test_wheel_holds_no_benchmark_code(wheel: Path) -> None:
    modules = [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".py")]
    assert modules
    assert all(n.startswith("sqlalchemy_seqkeys/") for n in modules), modules
    found = [n for n in modules if any(w in n for w in ("bench", "hotspots", "_emulator"))]
    assert not found


def _run(cwd: Path, env: dict[str, str], *command: str | Path, ok: bool = True) -> str:
    result = subprocess.run(
        [str(word) for word in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert (result.returncode == 0) is ok, f"{command}\n{result.stdout}\n{result.stderr}"
    return result.stdout + result.stderr


#: a hand-written migration: the plugin, not an import, gives op its seqkeys operations
EXTRA_MIGRATION = """\
from alembic import op

revision = "extra_sequence"
down_revision = {down!r}


def upgrade():
    op.create_table_sequence("pkg_extra", start=5)


def downgrade():
    op.drop_table_sequence("pkg_extra", start=5)
"""


@pytest.mark.slow
def test_alembic_init_and_check_from_the_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    bin_dir = venv / "bin"
    # this environment's pip installs into the new one (quicker than bootstrapping its own)
    install = [sys.executable, "-m", "pip", "--python", str(bin_dir / "python"), "install", "-q"]
    subprocess.run([*install, f"{wheel}[alembic]"], check=True, capture_output=True)

    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(MODELS, project / "models.py")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["SEQKEYS_DATABASE_URL"] = f"sqlite:///{project / 'app.db'}"
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"

    template = Path(_run(project, env, bin_dir / "seqkeys", "alembic-template").strip())
    assert template.is_relative_to(venv), template  # the installed copy, not the checkout
    _run(project, env, bin_dir / "alembic", "init", "-t", template, "migrations")
    revision = _run(project, env, bin_dir / "alembic", "revision", "--autogenerate", "-m", "init")
    assert "Detected added table 'mig_invoices'" in revision
    (script,) = (project / "migrations" / "versions").glob("*.py")
    text = script.read_text()
    assert "op.create_table_sequence('mig_invoice_no', start=1000)" in text
    assert "import sqlalchemy_seqkeys.alembic" not in text  # the plugin registers the operations
    _run(project, env, bin_dir / "alembic", "upgrade", "head")
    assert "No new upgrade operations detected" in _run(project, env, bin_dir / "alembic", "check")

    head = text.split("revision: str = ")[1].split("\n")[0].strip("'\"")
    extra = project / "migrations" / "versions" / "extra_sequence.py"
    extra.write_text(EXTRA_MIGRATION.format(down=head))
    _run(project, env, bin_dir / "alembic", "upgrade", "head")
    db = sqlite3.connect(project / "app.db")
    try:
        found = db.execute("SELECT next_value FROM sequences WHERE name = 'pkg_extra'")
        assert found.fetchall() == [(5,)]
        db.execute("DELETE FROM sequences WHERE name = 'mig_invoice_no'")
        db.commit()
    finally:
        db.close()
    check = _run(project, env, bin_dir / "alembic", "check", ok=False)
    assert "('CreateTableSequenceOp', 'mig_invoice_no')" in check


def _allowed_distributions() -> set[str]:
    """This package and what it requires without extras, transitively (normalised names)."""
    allowed: set[str] = set()
    todo = ["sqlalchemy-seqkeys"]
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in allowed:
            continue
        allowed.add(name)
        for line in importlib.metadata.requires(name) or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return allowed


def test_import_loads_no_optional_dependency() -> None:
    script = (
        "import json, sys; before = set(sys.modules); import sqlalchemy_seqkeys; "
        "print(json.dumps(sorted({m.split('.')[0] for m in set(sys.modules) - before})))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    owners = importlib.metadata.packages_distributions()
    allowed = _allowed_distributions()
    optional = {}
    for module in json.loads(result.stdout):
        if module in sys.stdlib_module_names:
            continue
        dists = {d.lower().replace("_", "-") for d in owners.get(module, [])}
        if dists - allowed:
            optional[module] = sorted(dists)
    assert not optional, f"import sqlalchemy_seqkeys loaded optional dependencies: {optional}"
