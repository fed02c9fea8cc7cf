"""``import sqlalchemy_seqkeys`` loads no strategy until one is used; every public name resolves.

Each check runs in a fresh interpreter (the test process has imported
everything long before) and compares ``sys.modules`` with what ``import
sqlalchemy`` alone loads: no timing, so no flaky threshold.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import sqlalchemy_seqkeys as sk
from sqlalchemy_seqkeys import _columns, errors

PACKAGE = Path(sk.__file__).resolve().parent

#: what ``import sqlalchemy_seqkeys`` may load: the package, its errors, and the
#: key-column checks (which import no strategy: tests below) with _compat
EAGER = {
    "sqlalchemy_seqkeys",
    "sqlalchemy_seqkeys._columns",
    "sqlalchemy_seqkeys._compat",
    "sqlalchemy_seqkeys.errors",
}


def _fresh(code: str) -> str:
    """The last line ``code`` prints in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=PACKAGE.parent
    )
    return out.stdout.splitlines()[-1]


def _new_modules(statement: str) -> set[str]:
    """The modules ``statement`` loads in a fresh interpreter that imported sqlalchemy."""
    code = (
        "import json, sys\n"
        "import sqlalchemy\n"
        "before = set(sys.modules)\n"
        f"{statement}\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    return set(json.loads(_fresh(code)))


def test_import_loads_no_strategy_nor_optional_module() -> None:
    # asyncio and importlib.metadata are SQLAlchemy's own imports today (2.0.52 and
    # 2.1): this package adds no module at all beyond the four it needs
    assert _new_modules("import sqlalchemy_seqkeys") == EAGER


#: modules a strategy that needs no database-specific code must not pull in
_OTHERS = (
    "sqlalchemy_seqkeys.sequences",
    "sqlalchemy_seqkeys.pooled",
    "sqlalchemy_seqkeys.bitreverse",
    "sqlalchemy_seqkeys.workers",
    "sqlalchemy_seqkeys.doctor",
    "sqlalchemy_seqkeys.types",
    "sqlalchemy_seqkeys.dialects",
    "sqlalchemy.dialects.",
    "sqlalchemy.orm",
)


@pytest.mark.parametrize(
    "statement",
    [
        "from sqlalchemy_seqkeys import SeqKeysError",
        "from sqlalchemy_seqkeys import Snowflake",
        "from sqlalchemy_seqkeys import new_uuid7",
        "from sqlalchemy_seqkeys import new_comb",
    ],
)
def test_a_client_side_strategy_loads_no_database_code(statement: str) -> None:
    loaded = sorted(m for m in _new_modules(statement) if m.startswith(_OTHERS))
    assert loaded == []


def test_the_doctor_function_outlives_an_import_of_its_module() -> None:
    # the package's `doctor` is the function, also once `sqlalchemy_seqkeys.doctor`
    # the module was imported (which sets the package attribute of that name)
    code = (
        "import sqlalchemy_seqkeys.doctor\n"
        "import sqlalchemy_seqkeys as sk\n"
        "print(sk.doctor.__module__, type(sk.doctor).__name__)"
    )
    assert _fresh(code) == "sqlalchemy_seqkeys.doctor function"


def test_star_import_gives_every_public_name() -> None:
    code = (
        "from sqlalchemy_seqkeys import *\n"
        "import sqlalchemy_seqkeys as sk\n"
        "print(sorted(set(sk.__all__) - set(globals())))"
    )
    assert _fresh(code) == "[]"


def test_all_the_lazy_map_and_the_typing_imports_agree() -> None:
    lazy = set(sk._EXPORTS)
    assert set(sk.__all__) == lazy | set(errors.__all__) | {"__version__"}
    assert len(sk.__all__) == len(set(sk.__all__))
    for name, module in sk._EXPORTS.items():
        assert getattr(sk, name) is getattr(sys.modules[f"sqlalchemy_seqkeys.{module}"], name)
    # the `if TYPE_CHECKING:` imports (what mypy and IDEs see) name the same modules
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    typing_block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
    )
    seen = {
        alias.name: node.module
        for node in typing_block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert seen == sk._EXPORTS
    assert set(dir(sk)) >= set(sk.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        sk.no_such_name  # noqa: B018


def test_the_column_checks_name_real_classes() -> None:
    # _columns looks the strategies up by module and name, so as not to import
    # them; a renamed class would silently escape the checks
    import sqlalchemy_seqkeys.comb
    import sqlalchemy_seqkeys.types
    import sqlalchemy_seqkeys.uuid7  # noqa: F401

    sk.ShardId  # noqa: B018 - imports shard
    for module, name, _what, _error in _columns._INTEGER_KINDS:
        getattr(sk, name)  # imports it
        assert isinstance(_columns._loaded(module, name), type), (module, name)
    for module, name in [
        ("types", "CombGuid"),
        ("types", "CombGuidDefault"),
        ("shard", "ShardId"),
        ("shard", "ShardComputed"),
    ]:
        assert isinstance(_columns._loaded(module, name), type), (module, name)
    assert _columns._loaded("uuid7", "new_uuid7") is sk.new_uuid7
    assert _columns._loaded("comb", "new_comb") is sk.new_comb
    assert sk.new_uuid7 in _columns._loaded("comb", "guid_minters")


#: optional modules no module of the package imports at its top: SQLAlchemy
#: imports both today, but a strategy must not cost them where it does not
FORBIDDEN_AT_TOP = ("asyncio", "importlib.metadata")


def _top_level_imports(tree: ast.Module) -> list[str]:
    names: list[str] = []
    body = list(tree.body)
    while body:
        node = body.pop(0)
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
        elif isinstance(node, ast.If) and getattr(node.test, "id", None) != "TYPE_CHECKING":
            body += node.body + node.orelse
        elif isinstance(node, ast.Try):
            body += node.body
    return names


def test_no_module_imports_asyncio_or_metadata_at_its_top() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "alembic_templates" in path.parts:  # an Alembic env.py, shipped in the wheel
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name in _top_level_imports(tree):
            if name in FORBIDDEN_AT_TOP or name.startswith(
                tuple(f"{n}." for n in FORBIDDEN_AT_TOP)
            ):
                found.append(f"{path.relative_to(PACKAGE)}: import {name}")
    assert not found, "import these inside the function that needs them:\n" + "\n".join(found)
