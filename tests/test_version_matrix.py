"""The version matrix says what it tests: noxfile.py's lowest set is pyproject.toml's bounds.

- Every runtime requirement (``[project] dependencies`` and the extras a user
  installs: not ``docs`` or ``test``) has one ``>=`` lower bound, and the lowest
  set pins exactly those bounds (generated at every ``nox`` run, never copied).
- The README's "Versions tested" table names the lowest set's versions, and CI
  (``.ci/run``) runs the README's test command, then the lowest set.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from packaging.requirements import Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def noxfile() -> ModuleType:
    """noxfile.py, loaded once (nox registers its sessions globally)."""
    pytest.importorskip("nox", reason="noxfile.py needs nox (the test extra)")
    spec = importlib.util.spec_from_file_location("seqkeys_noxfile", ROOT / "noxfile.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", "")  # restored: the noxfile puts pyenv's pythons on PATH
        spec.loader.exec_module(module)
    return module


def _runtime_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    lines = list(project["dependencies"])
    for name, requirements in extras.items():
        if name not in ("all", "docs", "test"):
            lines += requirements
    return [Requirement(line) for line in lines]


def test_the_lowest_set_is_every_runtime_lower_bound(noxfile: ModuleType) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = set(project["optional-dependencies"]) - {"all", "docs", "test"}
    assert set(noxfile.RUNTIME_EXTRAS) == extras, "a new extra: add it to RUNTIME_EXTRAS"
    pins = noxfile.lowest_constraints()
    for requirement in _runtime_requirements():
        (bound,) = [s.version for s in requirement.specifier if s.operator == ">="]
        assert pins[requirement.name.lower().replace("_", "-")] == bound, requirement
    assert pins["sqlalchemy"] == "2.0.56"


def test_a_requirement_without_a_lower_bound_is_refused(
    noxfile: ModuleType, tmp_path: Path
) -> None:
    pyproject = tmp_path / "pyproject.toml"
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    pyproject.write_text(text.replace('"PyMySQL>=1.1"', '"PyMySQL"'), encoding="utf-8")
    with pytest.raises(ValueError, match="PyMySQL"):
        noxfile.lowest_constraints(pyproject)


def test_the_readme_names_the_lowest_versions(noxfile: ModuleType) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (row,) = [line for line in readme.splitlines() if line.startswith("| lowest (`nox -s lowest`)")]
    assert f"| {noxfile.LOWEST_PYTHON} |" in row
    pins = noxfile.lowest_constraints()
    for name in ("sqlalchemy", "alembic", "sqlalchemy-spanner", "psycopg", "pymysql", "asyncpg"):
        assert f" {pins[name]}" in row, name
    assert f"SQLAlchemy {pins['sqlalchemy']}+" in readme  # the install line


def _ci_commands() -> list[str]:
    """The commands of ``.ci/run``, comments left out."""
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    return [line.split(" #", 1)[0].strip() for line in text.splitlines() if line.strip()[:1] != "#"]


def test_ci_runs_the_readme_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- test-command -->", 1)[1].split("```sh\n", 1)[1].split("\n```")[0]
    assert any(block.strip() in line for line in _ci_commands())


def test_the_matrix_sets_are_nox_sessions(noxfile: ModuleType) -> None:
    for name in ("lowest", "newest"):
        assert callable(getattr(noxfile, name)), name


def test_ci_runs_the_lowest_set_after_the_readme_command() -> None:
    commands = _ci_commands()
    readme_at = next(i for i, line in enumerate(commands) if "pytest" in line)
    lowest_at = next(i for i, line in enumerate(commands) if "nox -s lowest" in line)
    assert lowest_at > readme_at
