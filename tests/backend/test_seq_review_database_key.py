"""What a process received from a table sequence is kept per database (``database_key``):
an engine pinned to a schema or database by a pool "connect" listener connects another
way, and a connect argument joins the key unless it equals its own URL field.

Were: engines pinned to two schemas by "connect" listeners shared one floor
(SequenceMovedBackwardsError for the second tenant's good block); a connect argument
whose value equalled any part of the URL (``dbname="postgres"`` beside user postgres)
was left out of the key.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import PooledSequence, TableSequence, sequences_table
from sqlalchemy_seqkeys.sequences.table import database_key

pytestmark = pytest.mark.backend


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    with ExitStack() as stack:
        yield stack


def _pinned(stack: ExitStack, url: sa.URL | str, statement: str) -> sa.Engine:
    engine = sa.create_engine(url)
    stack.callback(engine.dispose)

    @sa.event.listens_for(engine, "connect")
    def pin(dbapi_connection: Any, record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute(statement)
        cursor.close()
        dbapi_connection.commit()

    return engine


def _pinned_tenants(stack: ExitStack, url: str) -> tuple[sa.Engine, sa.Engine, sa.Engine]:
    """An engine on ``url``, and two pinned to its new schemas tenant_a and tenant_b."""
    admin = sa.create_engine(url)
    stack.callback(admin.dispose)
    with admin.begin() as conn:
        for schema in ("tenant_a", "tenant_b"):
            conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    first = _pinned(stack, url, "SET search_path TO tenant_a")
    second = _pinned(stack, url, "SET search_path TO tenant_b")
    return admin, first, second


def test_engines_pinned_to_schemas_by_connect_listeners_keep_floors_apart(
    engines: Any, stack: ExitStack
) -> None:
    with engines.fresh_database("postgresql", "seq_review_key") as url:
        admin, first, second = _pinned_tenants(stack, url)
        assert database_key(first) != database_key(second)
        assert database_key(first) != database_key(admin)
        for engine in (first, second):
            metadata = sa.MetaData()
            sequences_table(metadata)
            metadata.create_all(engine)
        sequence = TableSequence("order_id", mode="batch", batch_size=10)
        assert sequence.create(first)
        assert sequence.create(second)
        assert [sequence.next_value(first) for _ in range(12)] == list(range(1, 13))
        assert sequence.next_value(second) == 1  # its own schema's row: no moved-backwards
        # dispose() keeps the key (the same creator)
        key = database_key(first)
        first.dispose()
        assert database_key(first) == key


def test_pooled_sequences_of_schemas_pinned_by_connect_listeners(
    engines: Any, stack: ExitStack
) -> None:
    with engines.fresh_database("postgresql", "seq_review_keyp") as url:
        _, first, second = _pinned_tenants(stack, url)
        sequence = PooledSequence("pooled_order_id", batch_size=10)
        assert sequence.create(first)
        assert sequence.create(second)
        assert [sequence.next_value(first) for _ in range(12)] == list(range(1, 13))
        assert sequence.next_value(second) == 1


def test_engines_own_listeners_keep_the_url_key(engines: Any, stack: ExitStack) -> None:
    url = engines.get("postgresql").url
    plain = sa.create_engine(url)
    other = sa.create_engine(url)
    stack.callback(plain.dispose)
    stack.callback(other.dispose)
    assert database_key(plain) == database_key(other)
    assert database_key(plain)[1] is False


@pytest.mark.parametrize(
    ("url", "args"),
    [
        ("postgresql+psycopg://postgres@127.0.0.1:5432/appdb", {"dbname": "postgres"}),
        ("postgresql+psycopg://postgres@127.0.0.1:5432/appdb", {"user": "appdb"}),
        ("postgresql+psycopg://postgres@127.0.0.1:5432/appdb", {"host": "appdb"}),
        ("mysql+pymysql://root@127.0.0.1:3306/appdb", {"database": "root"}),
    ],
)
def test_a_connect_arg_joins_the_key_unless_it_equals_its_own_url_field(
    url: str, args: dict[str, str], stack: ExitStack
) -> None:
    plain = sa.create_engine(url)
    picked = sa.create_engine(url, connect_args=args)
    same = sa.create_engine(url, connect_args={"dbname": "appdb"} if "postgresql" in url else {})
    for engine in (plain, picked, same):
        stack.callback(engine.dispose)
    assert database_key(picked) != database_key(plain)
    assert database_key(same) == database_key(plain)
