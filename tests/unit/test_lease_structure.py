"""Snowflake and the worker leases meet in one protocol: no import cycle, no private name crossing.

``snowflake`` depends on ``_lease.Lease``; ``workers`` implements it. Neither
imports the other, and neither reads another module's underscore names (issue
22, item 4).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import sqlalchemy_seqkeys

PACKAGE = Path(sqlalchemy_seqkeys.__file__).resolve().parent  # the installed copy too
MINE = ("snowflake", "workers", "_lease", "_background")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imported_at_import_time(path: Path, name: str) -> set[str]:
    """The package's modules that importing ``name`` imports (not under TYPE_CHECKING,
    not inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If):
                if "TYPE_CHECKING" not in ast.unparse(node.test):
                    visit(node.body)
                    visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in node.names)

    visit(tree.body)
    # a submodule's import runs its package's __init__ first: not an edge of its own
    return {m for m in found if m in MODULES and m != name and not name.startswith(m + ".")}


def _reachable(start: str, graph: dict[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


GRAPH = {name: _imported_at_import_time(path, name) for name, path in MODULES.items()}


@pytest.mark.parametrize("module", MINE)
def test_no_import_cycle_through_the_lease_and_snowflake_modules(module: str) -> None:
    name = f"sqlalchemy_seqkeys.{module}"
    assert name not in _reachable(name, GRAPH), f"{name} imports itself through a cycle"


def test_snowflake_and_workers_do_not_import_each_other() -> None:
    snowflake, workers = "sqlalchemy_seqkeys.snowflake", "sqlalchemy_seqkeys.workers"
    assert workers not in _reachable(snowflake, GRAPH)
    assert snowflake not in _reachable(workers, GRAPH)
    code = (
        "import sys, sqlalchemy_seqkeys.snowflake as s, sqlalchemy_seqkeys.workers as w; "
        "print(sorted(m for m in sys.modules if m.endswith(('.snowflake', '.workers'))))"
    )
    # both end up imported (the test imports both), and neither needed the other first
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "sqlalchemy_seqkeys.snowflake" in out.stdout
    for first, other in ((snowflake, workers), (workers, snowflake)):
        alone = subprocess.run(
            [sys.executable, "-c", f"import sys, {first}; print({other!r} in sys.modules)"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert alone.stdout.strip() == "False", f"importing {first} imported {other}"


def _private_names_read(path: Path) -> list[str]:
    """``module._name`` reads and ``from .module import _name`` imports of sibling modules."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: set[str] = set()
    crossings: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            for alias in node.names:
                if node.module is None:
                    modules.add(alias.asname or alias.name)  # from . import _fork
                elif alias.name.startswith("_") and not alias.name.startswith("__"):
                    crossings.append(f"from .{node.module} import {alias.name}")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and node.attr.startswith("_")
        ):
            crossings.append(f"{node.value.id}.{node.attr}")
    return crossings


@pytest.mark.parametrize("module", ["workers", "_lease", "_background"])
def test_the_lease_modules_read_no_private_name_of_another_module(module: str) -> None:
    assert _private_names_read(PACKAGE / f"{module}.py") == []


def test_snowflake_reads_no_private_name_of_another_module() -> None:
    assert _private_names_read(PACKAGE / "snowflake.py") == []
