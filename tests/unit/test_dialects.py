"""Each engine family's facts are behaviour in its own module: no string key to look up."""

from __future__ import annotations

import dataclasses
import enum
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql, postgresql, sqlite

import sqlalchemy_seqkeys
from sqlalchemy_seqkeys import CombLayout
from sqlalchemy_seqkeys._dialect import has_sequences, incrementing_sequences
from sqlalchemy_seqkeys.dialects import (
    FAMILIES,
    DialectFacts,
    GuidStorage,
    facts,
    has_facts,
)

#: the fields that hold text as text (names, SQL), not as a key into a table elsewhere
_TEXT = {"display_name", "now_ms_sql", "identifier_pattern", "identifier_pattern_words"}


@pytest.mark.parametrize("name", sorted(FAMILIES | {"common"}))
def test_every_family_module_gives_behaviour_not_keys(name: str) -> None:
    found = importlib.import_module(f"sqlalchemy_seqkeys.dialects.{name}").FACTS
    assert isinstance(found, DialectFacts)
    assert isinstance(found.guid_storage, GuidStorage)
    assert found.guid_order is None or isinstance(found.guid_order, CombLayout)
    for behaviour in (
        "read_sequence_catalog",
        "resync_statements",
        "read_sequence_next",
        "sequence_block",
    ):
        value = getattr(found, behaviour)
        assert value is None or callable(value), (name, behaviour)
    strings = {
        f.name
        for f in dataclasses.fields(found)
        if isinstance(getattr(found, f.name), str)
        and not isinstance(getattr(found, f.name), enum.Enum)  # CombLayout is a str enum
        and getattr(found, f.name)
    }
    assert strings <= _TEXT, strings - _TEXT


def test_a_dialect_finds_its_family_module() -> None:
    assert facts(mysql.dialect()) is facts("mariadb+pymysql") is facts("mysql")
    assert facts(postgresql.dialect()).display_name == "PostgreSQL"
    assert facts("spanner+spanner").generates_shard_columns
    assert facts("mssql").guid_order is CombLayout.AT_END
    # an engine without a module gets the common answers, and says so
    assert facts("firebird") is facts("informix")
    assert facts("firebird").display_name == ""
    assert not has_facts("firebird")
    assert has_facts("mariadb")


@pytest.mark.parametrize("bad", [None, 42, object(), b"postgresql"])
def test_a_wrong_lookup_fails_loudly(bad: object) -> None:
    with pytest.raises(TypeError, match="Dialect or a dialect name"):
        facts(bad)  # type: ignore[arg-type]


def test_a_missing_behaviour_is_none_not_a_silent_default() -> None:
    # SQLite has no sequences: no catalog to read, no resync; the callers check None
    assert facts("sqlite").read_sequence_catalog is None
    assert facts("sqlite").resync_statements is None
    assert facts("spanner").resync_statements is None


def test_mariadb_resync_builds_setval_statements() -> None:
    # the family module's builder is what runs: SETVAL, never ALTER ... RESTART
    # (the old key "alter_restart" named a builder that ran SETVAL)
    from sqlalchemy_seqkeys.pooled import resync_pooled_statements

    dialect = mysql.dialect(is_mariadb=True)
    texts = [
        str(s.compile(dialect=dialect))
        for s in resync_pooled_statements(dialect, "order_id", "orders", "id")
    ]
    assert texts[0].startswith("SET @seqkeys_resync_next = ")
    assert "SETVAL" in texts[1]
    assert not any("RESTART" in t for t in texts)


def test_one_has_sequences_test() -> None:
    assert has_sequences(postgresql.dialect())
    assert not has_sequences(sqlite.dialect())
    assert not has_sequences(mysql.dialect())  # MySQL has none
    assert has_sequences(mysql.dialect(is_mariadb=True))  # offline MariaDB: taken at its word
    connected_mysql = mysql.dialect()
    connected_mysql.server_version_info = (8, 0, 36)
    assert not has_sequences(connected_mysql)
    # Spanner has sequences, bit-reversed ones: none that increment
    spanner = sa.engine.default.DefaultDialect()
    spanner.name = "spanner"
    spanner.supports_sequences = True
    assert has_sequences(spanner)
    assert not incrementing_sequences(spanner)
    assert incrementing_sequences(postgresql.dialect())


def test_a_family_module_is_imported_only_when_its_engine_is_used() -> None:
    code = (
        "import json, sys\n"
        "import sqlalchemy\n"
        "from sqlalchemy_seqkeys.dialects import facts\n"
        "facts('sqlite')\n"
        "print(json.dumps(sorted(m for m in sys.modules if 'dialects.' in m)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(sqlalchemy_seqkeys.__file__).resolve().parents[1],
    )
    loaded = set(json.loads(out.stdout.splitlines()[-1]))
    assert "sqlalchemy_seqkeys.dialects.sqlite" in loaded
    for other in ("postgresql", "mysql", "mssql", "oracle"):
        assert f"sqlalchemy_seqkeys.dialects.{other}" not in loaded
        assert f"sqlalchemy.dialects.{other}" not in loaded


@pytest.mark.parametrize("name", ["postgresql", "mariadb", "spanner"])
def test_a_block_of_sequence_values_is_one_statement(name: str) -> None:
    # the same statements tests/compile/test_bit_reversed_ddl.py expects
    from tests.compile.test_bit_reversed_ddl import BLOCKS, DIALECTS, SEQUENCE

    dialect = DIALECTS[name]()
    build = facts(dialect).sequence_block
    assert build is not None
    statement = build(SEQUENCE.sequence, 7)
    assert " ".join(str(statement.compile(dialect=dialect)).split()) == BLOCKS[name]


def test_block_statements_where_there_are_none_or_limits() -> None:
    from sqlalchemy_seqkeys.dialects import mysql as mysql_family
    from sqlalchemy_seqkeys.dialects import spanner as spanner_family

    assert facts("oracle").sequence_block is None  # one value per statement there
    assert facts("mssql").sequence_block is None
    sequence = sa.Sequence("order_id")
    capped = spanner_family.sequence_block(sequence, 2**20)
    assert sorted(capped.compile().params.values()) == [1, spanner_family.MOST_PER_STATEMENT]
    dialect = mysql.dialect(is_mariadb=True)
    cte = mysql_family.sequence_block_without_sequence_engine(sequence, 7)
    assert "WITH RECURSIVE seqkeys_rows" in str(cte.compile(dialect=dialect))
