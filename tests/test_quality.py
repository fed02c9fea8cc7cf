"""The package is ruff-clean, mypy --strict clean, documents every public name, and its public
callables document their parameters with ``:param name:`` fields (SQLAlchemy's convention)."""

from __future__ import annotations

import ast
import doctest
import enum
import importlib
import inspect
import pkgutil
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import sqlalchemy_seqkeys

ROOT = Path(__file__).parent.parent
PACKAGE = ROOT / "sqlalchemy_seqkeys"


#: what ruff checks and formats
SOURCES = ["sqlalchemy_seqkeys", "benchmarks", "tests", "examples"]


def _tool(name: str) -> list[str]:
    exe = Path(sys.executable).parent / name
    if exe.exists():
        return [str(exe)]
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed; install the test extra: pip install -e '.[test]'")
    return [found]


def _passes(name: str, *args: str) -> None:
    """Runs the tool in the repository; it must exit 0 (its output is the failure message)."""
    result = subprocess.run(
        [*_tool(name), *args], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_check() -> None:
    _passes("ruff", "check", *SOURCES)


def test_ruff_format() -> None:
    _passes("ruff", "format", "--check", *SOURCES)


def test_mypy_strict() -> None:
    _passes("mypy", "--strict")  # the files pyproject names: the package and benchmarks/


def test_every_public_name_has_a_docstring() -> None:
    missing = []
    for name in sqlalchemy_seqkeys.__all__:
        if name.startswith("__"):
            continue
        obj = getattr(sqlalchemy_seqkeys, name)
        doc = inspect.getdoc(obj) or ""
        if obj is sqlalchemy_seqkeys.new_comb_guid:
            doc = inspect.getdoc(type(obj)) or ""
        if not doc.strip():
            missing.append(name)
    assert not missing, f"public names without a docstring: {missing}"


# -- :param name: fields (SQLAlchemy's convention) ----------------------------------------------


#: never documented: the instance and the class; and on a classmethod, Alembic's
#: ``operations``, which ``op.<name>(...)`` passes itself
_UNDOCUMENTED = frozenset({"self", "cls"})
_UNDOCUMENTED_CLASSMETHOD = _UNDOCUMENTED | {"operations"}


def _modules() -> list[str]:
    names = ["sqlalchemy_seqkeys"]
    for info in pkgutil.walk_packages([str(PACKAGE)], "sqlalchemy_seqkeys."):
        if not info.name.endswith("__main__"):
            names.append(info.name)
    return names


def _public_modules() -> list[str]:
    """The package's modules but those with a private part (``_dialect``, ``sequences._lane``)."""
    return [m for m in _modules() if not any(part.startswith("_") for part in m.split("."))]


def _written_in(func: Any, module: ModuleType) -> bool:
    """Whether ``func``'s code stands in ``module``'s file (not generated, not inherited)."""
    code = getattr(inspect.unwrap(func), "__code__", None)
    return code is not None and Path(code.co_filename) == Path(str(module.__file__))


def _overrides_outside(cls: type, name: str) -> bool:
    """Whether ``name`` overrides a method of SQLAlchemy, Alembic, pydantic (documented there)."""
    return any(
        name in vars(base) and not base.__module__.startswith("sqlalchemy_seqkeys")
        for base in cls.__mro__[1:]
    )


def _public_callables(module: ModuleType) -> Iterator[tuple[str, Any, str, frozenset[str]]]:
    """(name, function, docstring, parameters not documented) for each public callable
    written in ``module``: its functions, its classes' constructors (in the class docstring or
    ``__init__``'s) and their public methods; names from ``__all__`` where the module has it."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    for name in names:
        obj = getattr(module, name)
        if getattr(obj, "__module__", None) != module.__name__:
            continue  # imported: checked where it is written
        if inspect.isfunction(obj) and _written_in(obj, module):
            yield name, obj, inspect.getdoc(obj) or "", _UNDOCUMENTED
        if not inspect.isclass(obj) or issubclass(obj, enum.Enum):
            continue
        for constructor in ("__init__", "__new__"):
            func = vars(obj).get(constructor)
            func = func.__func__ if isinstance(func, staticmethod) else func
            if inspect.isfunction(func) and _written_in(func, module):
                doc = f"{inspect.getdoc(obj) or ''}\n{func.__doc__ or ''}"
                yield f"{name}()", func, doc, _UNDOCUMENTED
        for attr, raw in vars(obj).items():
            if attr.startswith("_") or _overrides_outside(obj, attr):
                continue
            func = raw.__func__ if isinstance(raw, classmethod | staticmethod) else raw
            if inspect.isfunction(func) and _written_in(func, module):
                doc = inspect.getdoc(getattr(obj, attr)) or ""
                undocumented = (
                    _UNDOCUMENTED_CLASSMETHOD if isinstance(raw, classmethod) else _UNDOCUMENTED
                )
                yield f"{name}.{attr}", func, doc, undocumented


def _lacking_params(module_name: str) -> list[str]:
    """``name: param, param`` for each public callable of the module with undocumented ones."""
    lacking = []
    for name, func, doc, undocumented in _public_callables(importlib.import_module(module_name)):
        params = inspect.signature(func).parameters.values()
        missing = [
            p.name
            for p in params
            if p.name not in undocumented
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            and not re.search(rf":param\s+(?:[^:\n]*\s)?{re.escape(p.name)}:", doc)
        ]
        if missing:
            lacking.append(f"{name}: {', '.join(missing)}")
    return lacking


@pytest.mark.parametrize("module_name", _public_modules())
def test_public_callables_document_their_parameters(module_name: str) -> None:
    """Every parameter of a public callable has a ``:param name:`` field, as in SQLAlchemy."""
    lacking = _lacking_params(module_name)
    assert not lacking, f"{module_name}: parameters without a :param field: {lacking}"


@pytest.mark.parametrize("module_name", _modules())
def test_doctests(module_name: str) -> None:
    module = importlib.import_module(module_name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    marker = "<!-- test-command -->"
    assert marker in readme, "the README marks its test command"
    block = readme.split(marker, 1)[1].split("```", 2)[1]
    command = "\n".join(line for line in block.splitlines()[1:] if line.strip())
    assert command.strip() in ci


#: a module docstring says what the module is for and where its doc page is (issue 22, item 9)
MODULE_DOCSTRING_LINES = 12


@pytest.mark.parametrize(
    "path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_module_docstrings_are_short_and_name_their_doc_page(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    first = tree.body[0] if tree.body else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)):
        pytest.fail(f"{path.name} has no module docstring: say in a line what it is for")
    docstring = first.value.value
    assert isinstance(docstring, str)
    lines = (first.end_lineno or first.lineno) - first.lineno + 1
    assert lines <= MODULE_DOCSTRING_LINES, (
        f"{path.name}'s docstring runs {lines} lines: keep what the module is for and a link "
        "to its doc page; the explanation belongs on that page"
    )
    pages = re.findall(r"docs/[\w./-]+\.md", docstring)
    if path.name in ("__main__.py",) or lines <= 3:
        return  # a one-line module: its name says enough
    assert pages, f"{path.name}'s docstring names no doc page (docs/....md)"
    for page in pages:
        assert (ROOT / page).exists(), f"{path.name} names {page}, which does not exist"
