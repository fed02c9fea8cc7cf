"""Other libraries' private names are used in sqlalchemy_seqkeys/_compat.py only, and work there."""

from __future__ import annotations

import re
from pathlib import Path

import sqlalchemy as sa

import sqlalchemy_seqkeys
from sqlalchemy_seqkeys import Snowflake, new_uuid7
from sqlalchemy_seqkeys._compat import (
    declared_callable,
    insert_multi_values,
    insert_values,
    type_variants,
)

PACKAGE = Path(sqlalchemy_seqkeys.__file__).resolve().parent

#: private names of SQLAlchemy, Alembic and sqlalchemy-spanner this package uses
PRIVATE = [
    "_set_parent_with_dispatch",
    "_variant_mapping",
    "sqltypes._Binary",
    "._fn",
    '"_fn"',
    '"_values"',
    '"_multi_values"',
    "._values",
    "._multi_values",
    "_impls",
    "_get_table_filter_query",
    "__sqlalchemy_greenlet_provider__",
    "await_only",
    "_proxied",
    "util.concurrency",
    "def _copy(",
]


#: uses outside _compat allowed (none)
KNOWN: set[tuple[str, str]] = set()


def test_private_names_are_used_in_compat_only() -> None:
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "_compat.py":
            continue
        text = path.read_text(encoding="utf-8")
        for name in PRIVATE:
            if (str(path.relative_to(PACKAGE)), name) in KNOWN:
                continue
            for match in re.finditer(re.escape(name), text):
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{path.relative_to(PACKAGE)}:{line}: {name}")
    assert not found, "use sqlalchemy_seqkeys._compat instead:\n" + "\n".join(found)


def test_declared_callable_is_what_default_was_given() -> None:
    snowflake = Snowflake(1)

    def mint() -> int:
        return 1

    for given in (snowflake, new_uuid7, mint):
        column = sa.Column("id", sa.BigInteger, default=given)
        assert declared_callable(column.default) is given
    assert declared_callable(sa.Column("id", sa.BigInteger, default=7).default) is None
    assert declared_callable(None) is None


def test_type_variants_lists_the_base_type_first() -> None:
    type_ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    variants = type_variants(type_)
    assert variants[0] == (None, type_)
    assert [(name, type(t)) for name, t in variants[1:]] == [("sqlite", sa.Integer)]


def test_insert_values() -> None:
    t = sa.table("t", sa.column("a"), sa.column("b"))
    one = insert_values(t.insert().values(a=1, b=2))
    assert one is not None
    assert {getattr(k, "key", k): v.value for k, v in one.items()} == {"a": 1, "b": 2}
    assert insert_values(t.insert()) is None
    assert not insert_multi_values(t.insert().values(a=1))
    assert insert_multi_values(t.insert().values([{"a": 1}, {"a": 2}]))
