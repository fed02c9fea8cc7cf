"""The version matrix: ``nox`` runs the whole suite on the lowest and on the newest versions.

    nox                       # both sets below, one after the other
    nox -s lowest             # Python 3.10, every runtime requirement at its lower bound
    nox -s newest             # Python 3.13, the newest release of everything
    nox -s tests-3.11 -- tests/unit -n 0   # one Python, newest versions, any pytest arguments
    nox -s constraints        # print the lowest set (generated from pyproject.toml)

The lowest set pins each requirement of ``[project] dependencies`` and of the
runtime extras (not the ``docs`` and ``test`` tooling) to its ``>=`` bound, as a
pip constraints file generated from ``pyproject.toml`` at every run: the bounds
are written once, and a bound raised there is the one tested.
Pythons are found on PATH as ``python3.X`` or, failing that, in pyenv's
versions directory. Arguments after ``--`` replace the suite's default ones
(the README's: two xdist workers).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nox
from packaging.requirements import Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).parent
LOWEST_PYTHON = "3.10"
NEWEST_PYTHON = "3.13"
PYTHONS = [LOWEST_PYTHON, "3.11", "3.12", NEWEST_PYTHON]
#: the extras a user installs the library with; their lower bounds are promises
RUNTIME_EXTRAS = (
    *("postgresql", "mysql", "spanner", "farmhash", "plot", "alembic", "asyncio", "pydantic"),
    "fpe",
)
#: the README's test command
DEFAULT_PYTEST_ARGS = ["-n", "2", "--dist", "loadfile"]

nox.options.sessions = ["lowest", "newest"]
nox.options.download_python = "never"  # only the package registries are reachable
nox.options.reuse_venv = "yes"


def _pyenv_pythons() -> None:
    """Make ``python3.X`` of pyenv's versions findable (its shims serve only the active one)."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    links = ROOT / ".nox" / "pythons"
    for version in PYTHONS:
        name = f"python{version}"
        found = sorted(root.glob(f"{version}.*/bin/{name}"))
        if not found:
            continue
        links.mkdir(parents=True, exist_ok=True)
        link = links / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(found[-1])
    if links.is_dir():
        os.environ["PATH"] = f"{links}{os.pathsep}{os.environ.get('PATH', '')}"


_pyenv_pythons()


def lowest_constraints(pyproject: Path = ROOT / "pyproject.toml") -> dict[str, str]:
    """Distribution name -> its lower bound, for every runtime requirement of ``pyproject``.

    A requirement without a ``>=`` bound is an error: the promise would be untested.
    """
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"])
    for extra in RUNTIME_EXTRAS:
        requirements += project["optional-dependencies"][extra]
    pins: dict[str, str] = {}
    for line in requirements:
        requirement = Requirement(line)
        name = requirement.name.lower().replace("_", "-")
        if name == project["name"]:
            continue
        bounds = [spec.version for spec in requirement.specifier if spec.operator == ">="]
        if len(bounds) != 1:
            raise ValueError(f"{line!r} in pyproject.toml needs one '>=' lower bound")
        if name in pins and pins[name] != bounds[0]:
            raise ValueError(f"{name} has two lower bounds: {pins[name]} and {bounds[0]}")
        pins[name] = bounds[0]
        if "binary" in requirement.extras and name == "psycopg":
            pins["psycopg-binary"] = bounds[0]  # psycopg[binary] pins its own build
    return dict(sorted(pins.items()))


def _constraints_file(session: nox.Session) -> Path:
    # beside the virtualenv: session.create_tmp() would also move TMPDIR into the checkout
    path = Path(session.virtualenv.location) / "constraints-lowest.txt"
    lines = [f"{name}=={version}" for name, version in lowest_constraints().items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


#: the lowest set checks behaviour; types are checked against the newest releases (as a
#: developer installs them): SQLAlchemy 2.0's and matplotlib 3.8's annotations are older
LOWEST_DESELECT = ["--deselect", "tests/test_quality.py::test_mypy_strict"]


def _pytest(session: nox.Session, *extra: str) -> None:
    session.run("python", "-m", "pip", "list", "--format=freeze", silent=False)
    session.run("python", "-m", "pytest", *(session.posargs or DEFAULT_PYTEST_ARGS), *extra)


@nox.session(python=LOWEST_PYTHON)
def lowest(session: nox.Session) -> None:
    """The whole suite with every runtime requirement at its lower bound, on the lowest Python."""
    constraints = _constraints_file(session)
    session.install("-c", str(constraints), "-e", ".[test]")
    _pytest(session, *LOWEST_DESELECT)


@nox.session(python=NEWEST_PYTHON)
def newest(session: nox.Session) -> None:
    """The whole suite with the newest release of everything, on the newest Python."""
    session.install("--upgrade", "--upgrade-strategy", "eager", "-e", ".[test]")
    _pytest(session)


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """The suite (or the pytest arguments after ``--``) on one Python, newest versions."""
    session.install("--upgrade", "-e", ".[test]")
    _pytest(session)


@nox.session(python=False)
def constraints(session: nox.Session) -> None:
    """Print the lowest set, as pip constraints."""
    for name, version in lowest_constraints().items():
        print(f"{name}=={version}")
