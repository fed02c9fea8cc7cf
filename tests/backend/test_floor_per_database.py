"""What a process received from a table sequence (the "moved backwards" floor) is kept per
database: by URL where the URL alone picks the database, else per way of connecting.

Kept by URL only, two engines with the same URL reaching different databases (a
``creator=``, as cloud SQL connectors do; ``connect_args`` picking a search_path; a
``do_connect`` listener) refused each other's good blocks with SequenceMovedBackwardsError.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import SequenceMovedBackwardsError, TableSequence, sequences_table
from tests._faults_inject import created_anew_while_taking
from tests._helpers import tenant_schemas

pytestmark = pytest.mark.backend

NAME = "floor_seq"


@pytest.fixture
def two_databases(engines: Any) -> Iterator[tuple[sa.URL, sa.URL]]:
    """This run's PostgreSQL database and a new one, dropped afterwards."""
    first = engines.get("postgresql").url
    with engines.fresh_database("postgresql", "floor") as second:
        yield first, sa.make_url(second)


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    """Disposes the engines a test makes (``stack.callback(engine.dispose)``)."""
    with ExitStack() as stack:
        yield stack


def _engine(stack: ExitStack, url: sa.URL | str, **kw: Any) -> Engine:
    engine = sa.create_engine(url, **kw)
    stack.callback(engine.dispose)
    return engine


def _prepare(engine: Engine) -> TableSequence:
    """A sequences table holding NAME anew at 1; its TableSequence, a value per allocation."""
    metadata = sa.MetaData()
    sequences_table(metadata)
    metadata.create_all(engine)
    sequence = TableSequence(NAME, mode="separate")
    sequence.drop(engine, checkfirst=True)
    sequence.create(engine)
    return sequence


def _move_back(engine: Engine) -> None:
    """The row back at 1, as a restore from an old backup leaves it."""
    table = sequences_table(sa.MetaData())
    with engine.begin() as conn:
        conn.execute(sa.update(table).where(table.c.name == NAME).values(next_value=1))


def _connect_to(url: sa.URL) -> Any:
    return lambda: psycopg.connect(
        host=url.host, port=url.port, user=url.username, dbname=url.database
    )


def test_engines_with_creators_keep_floors_of_their_own(
    two_databases: tuple[sa.URL, sa.URL], stack: ExitStack
) -> None:
    # the same URL (no database in it) for both: each creator reaches another database
    first, second = (
        _engine(stack, "postgresql+psycopg://", creator=_connect_to(url)) for url in two_databases
    )
    sequence = _prepare(first)
    _prepare(second)
    assert sequence.next_values(first, 150)[-1] == 150
    assert sequence.next_value(second) == 1  # was SequenceMovedBackwardsError
    assert sequence.next_value(first) == 151
    _move_back(first)
    with pytest.raises(SequenceMovedBackwardsError):
        sequence.next_value(first)
    first.dispose()  # the floor is the creator's: the engine's next pool keeps it
    with pytest.raises(SequenceMovedBackwardsError):
        sequence.next_value(first)
    assert sequence.next_value(second) == 2


def test_connect_args_picking_a_search_path_keep_floors_of_their_own(
    pg_engine: Engine, stack: ExitStack
) -> None:
    schemas = ("seqkeys_floor_a", "seqkeys_floor_b")
    with tenant_schemas(pg_engine, *schemas):
        a, b = (
            _engine(stack, pg_engine.url, connect_args={"options": f"-csearch_path={schema}"})
            for schema in schemas
        )
        sequence = _prepare(a)
        _prepare(b)
        assert sequence.next_values(a, 150)[-1] == 150
        assert sequence.next_value(b) == 1  # was SequenceMovedBackwardsError
        _move_back(a)
        a.dispose()
        with pytest.raises(SequenceMovedBackwardsError):  # kept across dispose()
            sequence.next_value(a)
        # another engine with the same URL and connect_args reaches the same schema
        again = _engine(
            stack, pg_engine.url, connect_args={"options": f"-csearch_path={schemas[0]}"}
        )
        with pytest.raises(SequenceMovedBackwardsError):
            sequence.next_value(again)


def test_a_do_connect_listener_keeps_a_floor_of_its_own(
    two_databases: tuple[sa.URL, sa.URL], stack: ExitStack
) -> None:
    first_url, second_url = two_databases
    plain = _engine(stack, first_url)
    redirected = _engine(stack, first_url)

    @sa.event.listens_for(redirected, "do_connect")
    def to_second(dialect: Any, record: Any, cargs: Any, cparams: dict[str, Any]) -> None:
        cparams["dbname"] = second_url.database

    sequence = _prepare(plain)
    _prepare(redirected)
    assert sequence.next_values(plain, 150)[-1] == 150
    assert sequence.next_value(redirected) == 1  # was SequenceMovedBackwardsError


def test_engines_on_one_url_share_the_floor_across_dispose(
    pg_engine: Engine, stack: ExitStack
) -> None:
    # the floor's point: a restore is noticed by the engine that took values, after
    # its dispose(), and by another engine of the process on the same database
    first = _engine(stack, pg_engine.url)
    timeout = _engine(stack, pg_engine.url, connect_args={"connect_timeout": 10})
    sequence = _prepare(first)
    assert sequence.next_values(first, 150)[-1] == 150
    _move_back(first)
    first.dispose()
    with pytest.raises(SequenceMovedBackwardsError):
        sequence.next_value(first)
    with pytest.raises(SequenceMovedBackwardsError):  # connect_args that pick nothing
        sequence.next_value(timeout)
    with pytest.raises(SequenceMovedBackwardsError):  # the copy under execution_options
        sequence.next_value(first.execution_options(logging_token="copy"))


def test_a_tenant_map_given_afresh_per_request_keeps_its_floor(pg_engine: Engine) -> None:
    """A new ``{None: schema}`` dict per request (as a web app builds it) is one tenant.

    SQLAlchemy adds ``"_none"`` to such a dict at its first statement: the floor
    was read under the key before and recorded under the key after, so a row
    moved backwards was never noticed for a map made afresh.
    """
    schema = "seqkeys_floor_fresh_map"
    with tenant_schemas(pg_engine, schema):

        def tenant() -> Engine:
            return pg_engine.execution_options(schema_translate_map={None: schema})

        sequence = _prepare(tenant())
        assert sequence.next_values(tenant(), 150)[-1] == 150
        _move_back(tenant())
        with pytest.raises(SequenceMovedBackwardsError):
            sequence.next_value(tenant())


def test_a_sequence_created_anew_during_an_allocation_starts_afresh(
    pg_engine: Engine, stack: ExitStack
) -> None:
    """An allocation from the former row, recorded after the row was created anew, made
    the new row's first values look like a row moved backwards: refused, block by block."""
    engine = _engine(stack, pg_engine.url)
    sequence = _prepare(engine)
    assert sequence.next_values(engine, 150)[-1] == 150
    got = created_anew_while_taking(
        engine, sequence, lambda: sequence.next_values(engine, 50), paused_after="UPDATE"
    )  # 151..200 taken from the former row, committed (autocommit), before it was created anew
    assert got == list(range(151, 201))
    assert sequence.next_value(engine) == 1  # was SequenceMovedBackwardsError (up to 200)
