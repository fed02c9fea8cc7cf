"""The release, checked as a package index and a user would: sdist and wheel, installed clean.

- ``python -m build`` makes the sdist and the wheel; ``twine check --strict``
  passes both (metadata, and the README rendered as the index renders it); both
  carry the version of ``sqlalchemy_seqkeys/__init__.py``.
- The wheel, installed into a new virtual environment with no extra, pulls in
  only SQLAlchemy (and what SQLAlchemy requires), imports, and runs
  ``seqkeys demo`` on SQLite.
- The sdist carries the tests, benchmarks and project files its unit tests
  need; installed into a new virtual environment (the package from the sdist,
  the test tools borrowed from this one), ``tests/unit`` passes against the
  installed package, not a source tree.
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
import sysconfig
import tarfile
import zipfile
from pathlib import Path
from typing import NamedTuple

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).parent.parent
MODELS = ROOT / "tests" / "alembic_project" / "models.py"


class Dists(NamedTuple):
    sdist: Path
    wheel: Path


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    """The sdist and the wheel, built as a release is: ``python -m build``."""
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (sdist,) = out.glob("sqlalchemy_seqkeys-*.tar.gz")
    (wheel,) = out.glob("sqlalchemy_seqkeys-*.whl")
    return Dists(sdist, wheel)


@pytest.fixture(scope="module")
def wheel(dists: Dists) -> Path:
    return dists.wheel


def _venv(path: Path) -> Path:
    """A new virtual environment without pip (this one's pip installs into it); its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    return path / "bin" / "python"


def _pip_into(python: Path, *args: str | Path) -> None:
    command = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", *args]
    result = subprocess.run(
        [str(a) for a in command], capture_output=True, text=True, check=False, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


@pytest.mark.slow
def test_twine_check_strict_passes_the_sdist_and_the_wheel(dists: Dists) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(dists.sdist), str(dists.wheel)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("PASSED") == 2, result.stdout


@pytest.mark.slow
def test_both_carry_the_package_version(dists: Dists) -> None:
    version = sqlalchemy_seqkeys_version()
    assert dists.sdist.name == f"sqlalchemy_seqkeys-{version}.tar.gz"
    assert dists.wheel.name == f"sqlalchemy_seqkeys-{version}-py3-none-any.whl"
    with zipfile.ZipFile(dists.wheel) as zf:
        metadata = zf.read(f"sqlalchemy_seqkeys-{version}.dist-info/METADATA").decode()
    assert f"\nVersion: {version}\n" in metadata
    assert "\nRequires-Python: >=3.10\n" in metadata
    assert "\nDescription-Content-Type: text/markdown\n" in metadata


def sqlalchemy_seqkeys_version() -> str:
    text = (ROOT / "sqlalchemy_seqkeys" / "__init__.py").read_text(encoding="utf-8")
    (line,) = [x for x in text.splitlines() if x.startswith("__version__ = ")]
    return line.split('"')[1]


@pytest.mark.slow
def test_sdist_carries_what_its_unit_tests_need(dists: Dists) -> None:
    with tarfile.open(dists.sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    for expected in (
        "pyproject.toml",
        "README.md",
        "CHANGELOG.md",
        "CONTRIBUTING.md",
        "sqlalchemy_seqkeys/__init__.py",
        "sqlalchemy_seqkeys/py.typed",
        "alembic_templates/seqkeys/env.py",
        "tests/__init__.py",
        "tests/conftest.py",
        "tests/unit/test_version.py",
        "benchmarks/__init__.py",
        "docs/reference/errors.md",
    ):
        assert expected in names, expected
    junk = [n for n in names if n.startswith((".venv/", ".nox/", "site/", ".git/", "dist/"))]
    assert not junk, junk[:10]


@pytest.mark.slow
def test_the_wheel_installs_clean_without_extras_and_runs(wheel: Path, tmp_path: Path) -> None:
    python = _venv(tmp_path / "venv")
    _pip_into(python, wheel)
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "list", "--format=json"],
        capture_output=True,
        text=True,
        check=True,
    )
    installed = {d["name"].lower().replace("_", "-") for d in json.loads(listed.stdout)}
    assert installed <= _allowed_distributions() | {"pip"}, installed
    env = _clean_env()
    probe = (
        "import sys, sqlalchemy_seqkeys as s; "
        "print(s.__version__); print(s.__file__.startswith(sys.prefix))"
    )
    out = _run(tmp_path, env, python, "-c", probe).split()
    assert out == [sqlalchemy_seqkeys_version(), "True"]
    demo = _run(tmp_path, env, python.parent / "seqkeys", "demo")
    assert "seqkeys_demo" in demo or "comb" in demo.lower(), demo


@pytest.mark.slow
def test_unit_tests_pass_against_the_installed_sdist(dists: Dists, tmp_path: Path) -> None:
    python = _venv(tmp_path / "venv")
    _pip_into(python, "--no-deps", dists.sdist)
    # the test tools and optional dependencies come from this environment, after the venv's own
    purelib = sysconfig.get_paths()["purelib"]
    (venv_purelib,) = (tmp_path / "venv" / "lib").glob("python*/site-packages")
    (venv_purelib / "_borrowed_test_tools.pth").write_text(purelib + "\n", encoding="utf-8")
    with tarfile.open(dists.sdist) as tf:
        tf.extractall(tmp_path / "src", filter="data")
    (source,) = (tmp_path / "src").iterdir()
    shutil.rmtree(source / "sqlalchemy_seqkeys")  # the installed package is the one tested
    env = _clean_env()
    where = _run(source, env, python, "-c", "import sqlalchemy_seqkeys as s; print(s.__file__)")
    assert Path(where.strip()).is_relative_to(venv_purelib), where
    out = _run(
        source, env, python, "-m", "pytest", "tests/unit", "-q", "-n", "0", "-p", "no:cacheprovider"
    )
    assert " passed" in out, out[-3000:]


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
        timeout=900,
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
    bin_dir = _venv(venv).parent
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
