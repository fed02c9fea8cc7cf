"""The package's shape stays readable: no import cycle, no class over 300 lines, no function
over 100 (issue 22's bounds). Read from the source: nothing is imported or timed."""

from __future__ import annotations

import ast
from pathlib import Path

import sqlalchemy_seqkeys as sk

PACKAGE = Path(sk.__file__).resolve().parent
MAX_CLASS_LINES = 300
MAX_FUNCTION_LINES = 100


def _modules() -> dict[str, tuple[Path, ast.Module]]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "alembic_templates" in path.parts:  # an Alembic env.py shipped in the wheel
            continue
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = (path, ast.parse(path.read_text(encoding="utf-8")))
    return found


def _imported_at_import_time(name: str, path: Path, tree: ast.Module, known: set[str]) -> set[str]:
    """The package's modules that importing ``name`` imports (not under TYPE_CHECKING)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    body: list[ast.stmt] = list(tree.body)
    while body:
        node = body.pop(0)
        if isinstance(node, ast.If):
            if getattr(node.test, "id", None) != "TYPE_CHECKING":
                body += node.body + node.orelse
        elif isinstance(node, ast.Try):
            body += node.body + node.orelse + node.finalbody
        elif isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            targets.add(base)
            targets.update(f"{base}.{alias.name}" for alias in node.names)
    return {t for t in targets if t in known and t != name}


def test_no_import_cycle_inside_the_package() -> None:
    modules = _modules()
    graph = {
        name: _imported_at_import_time(name, path, tree, set(modules))
        for name, (path, tree) in modules.items()
    }
    # a package imports its parent package first: that edge is not a cycle of ours
    for name in graph:
        graph[name] -= {p for p in graph if name.startswith(p + ".")}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_no_class_over_300_lines_and_no_function_over_100() -> None:
    too_long = []
    for path, tree in _modules().values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                limit = MAX_CLASS_LINES
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                limit = MAX_FUNCTION_LINES
            else:
                continue
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > limit:
                where = f"{path.relative_to(PACKAGE)}:{node.lineno}"
                too_long.append(f"{where} {node.name}: {lines} lines (at most {limit})")
    assert not too_long, "split these by what they do:\n" + "\n".join(too_long)


#: _columns' lookups of a strategy's names in sys.modules: ``_loaded("comb", "name")``
BY_STRING = ("_loaded", "_instance")


def _names_read_from(tree: ast.Module, modules: set[str], package: str) -> list[tuple[int, str]]:
    """(line, "module._name") for each underscore name ``tree`` takes from another module."""
    aliases: dict[str, str] = {}  # a local name -> the package module it stands for
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            if base not in modules:
                continue
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:  # a module, private or not
                    aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
                elif alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append((node.lineno, f"{base}.{alias.name}"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in BY_STRING:
            module, name = (getattr(a, "value", "") for a in node.args[-2:])
            if isinstance(name, str) and name.startswith("_"):
                found.append((node.lineno, f"sqlalchemy_seqkeys.{module}.{name}"))
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            found.append((node.lineno, f"{aliases[node.value.id]}.{node.attr}"))
    return found


def test_no_module_reads_another_modules_underscore_names() -> None:
    modules = _modules()
    read = []
    for name, (path, tree) in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for line, what in _names_read_from(tree, set(modules), package):
            read.append(f"{path.relative_to(PACKAGE)}:{line} reads {what}")
    assert not read, (
        "give these a name without the underscore in the module that defines them "
        "(public in the package, left out of __all__):\n" + "\n".join(read)
    )
