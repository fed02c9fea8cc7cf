"""catalog_reader: one engine's catalog query becomes its CatalogReader (PostgreSQL's and
SQL Server's), passing the sequence's quoted, schema-translated name as ``:name``."""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys.dialects import catalog_reader, facts

#: a catalog of one sequence, found by the name the reader passes
_QUERY = "SELECT 5, 1 WHERE :name = 'orders_id'"


@pytest.fixture
def conn() -> Iterator[sa.Connection]:
    engine = sa.create_engine("sqlite://")
    with engine.connect() as conn:
        yield conn
    engine.dispose()


def test_a_row_is_increment_and_cycles_and_no_row_is_none(conn: sa.Connection) -> None:
    read = catalog_reader(_QUERY, "a catalog")
    assert read(conn, sa.Sequence("orders_id")) == (5, True)
    assert read(conn, sa.Sequence("other")) is None


def test_the_name_is_quoted_and_its_schema_translated(conn: sa.Connection) -> None:
    read = catalog_reader("SELECT 1, 0 WHERE :name = 'moved.\"s q\"'", "a catalog")
    sequence = sa.Sequence("s q", schema="kept")
    assert read(conn, sequence) is None
    moved = conn.execution_options(schema_translate_map={"kept": "moved"})
    assert read(moved, sequence) == (1, False)


def test_a_server_error_is_raised_not_read_as_no_sequence(conn: sa.Connection) -> None:
    read = catalog_reader("SELECT increment, cycles FROM no_such_catalog WHERE name = :name", "x")
    with pytest.raises(sa.exc.OperationalError, match="no_such_catalog"):
        read(conn, sa.Sequence("orders_id"))


@pytest.mark.parametrize(
    "query",
    [
        "SELECT 1, 0",  # blind to the name: would read some other sequence's row
        "SELECT 1, 0 WHERE x = :nam",
        "SELECT 1, 0 WHERE :name = :schema",
    ],
)
def test_a_query_that_does_not_take_the_name_alone_is_refused(query: str) -> None:
    with pytest.raises(ValueError, match=r"the sequence's name as :name, its only parameter"):
        catalog_reader(query, "a catalog")


@pytest.mark.parametrize(
    ("family", "catalog"), [("postgresql", "pg_sequence"), ("mssql", "sys.sequences")]
)
def test_the_engines_readers_say_what_they_read(family: str, catalog: str) -> None:
    read = facts(family).read_sequence_catalog
    assert read is not None
    doc = inspect.getdoc(read) or ""
    assert doc.startswith(f"``(increment, cycles)`` of ``sequence`` from ``{catalog}``")
    assert ":param conn:" in doc
    assert ":param sequence:" in doc
