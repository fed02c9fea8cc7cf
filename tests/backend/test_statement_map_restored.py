"""A schema_translate_map given to one statement leaves the connection as it found it.

A library default (TableSequence in every mode, PooledSequence, BitReversedSequence,
BitReversed) takes the key of a row sent to a tenant by a map on the statement: it ran
with the map on the connection and then set the map back as an explicit None, which
outranks every later statement's map on that Connection (SQLAlchemy merges the
connection's options over the statement's): the second row, and every read after it,
went to the default schema.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from sqlalchemy_seqkeys import (
    BitReversed,
    BitReversedSequence,
    PooledSequence,
    SeqKeysError,
    SequenceMode,
    TableSequence,
    reverse_bits,
    sequences_table,
)
from sqlalchemy_seqkeys.sequences._allocator import refills
from tests._helpers import tenant_schemas

pytestmark = pytest.mark.backend

TENANT = "seqkeys_smap_t"
EMPTY = "seqkeys_smap_empty"  # a rows table, no sequences: the default fails there
ROWS = "seqkeys_smap_rows"
TO_TENANT: dict[str, Any] = {"schema_translate_map": {None: TENANT}}
#: the tenant's sequences start here, the default schema's at 1
TENANT_START = 1_000_000


class Keyed(NamedTuple):
    engine: Engine
    #: the rows table, its key ``id`` taken from the default
    rows: sa.Table
    #: whether the default bit-reverses its sequence's values
    reversed: bool


def _defaults() -> dict[str, Any]:
    return {
        **{
            f"TableSequence({m.value})": TableSequence(
                "smap_orders", mode=m, batch_size=10, low_watermark=3
            )
            for m in SequenceMode
        },
        "PooledSequence": PooledSequence("smap_pooled", batch_size=10),
        "BitReversedSequence": BitReversedSequence("smap_bitrev", batch_size=10),
        "BitReversed": BitReversed(TableSequence("smap_counter", mode="batch", batch_size=10)),
    }


KINDS = list(_defaults())


def _creatable(default: Any, start: int) -> Any:
    """The sequence ``default`` takes its values from, starting at ``start``."""
    if isinstance(default, BitReversed) and not isinstance(default, BitReversedSequence):
        default = default.source
    if isinstance(default, TableSequence):
        return TableSequence(default.name, mode="separate", start=start)
    return type(default)(default.name, batch_size=10, start=start)


@pytest.fixture(params=KINDS)
def keyed(request: pytest.FixtureRequest, pg_engine: Engine) -> Iterator[Keyed]:
    """The rows table keyed by one library default, in the default schema and in TENANT
    (their sequences start at 1 and TENANT_START); in EMPTY, a rows table only."""
    default = _defaults()[request.param]
    metadata = sa.MetaData()
    sequences_table(metadata)
    rows = sa.Table(
        ROWS,
        metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, default=default, autoincrement=False),
        sa.Column("n", sa.Integer),
    )
    home = _creatable(default, 1)

    def drop_home() -> None:
        if not isinstance(home, TableSequence):  # a native sequence; a row goes with its table
            home.drop(pg_engine, checkfirst=True)
        metadata.drop_all(pg_engine)

    with tenant_schemas(pg_engine, TENANT, EMPTY) as (tenant, empty):
        drop_home()
        try:
            metadata.create_all(pg_engine)
            home.create(pg_engine)
            metadata.create_all(tenant)
            _creatable(default, TENANT_START).create(tenant)
            rows.create(empty)
            yield Keyed(pg_engine, rows, isinstance(default, BitReversed))
        finally:
            refills.wait_idle(30)  # an async_batch refill may still run
            drop_home()


def _stored(keyed: Keyed, schema: str | None) -> list[tuple[int, int]]:
    """(key, n) of the rows stored in ``schema``'s table (None: the default schema),
    the key as its sequence gave it (a bit-reversed key reversed back)."""
    engine = keyed.engine
    if schema is not None:
        engine = engine.execution_options(schema_translate_map={None: schema})
    with engine.connect() as conn:
        found = conn.execute(sa.select(keyed.rows.c.id, keyed.rows.c.n).order_by("n")).all()
    return [(reverse_bits(i) if keyed.reversed else i, n) for i, n in found]


def _assert_in_tenant(keyed: Keyed, ns: list[int]) -> None:
    in_tenant = _stored(keyed, TENANT)
    assert [n for _, n in in_tenant] == ns
    assert all(key >= TENANT_START for key, _ in in_tenant), in_tenant  # the tenant's keys
    assert _stored(keyed, None) == []  # nothing reached the default schema


def test_statement_maps_on_one_connection_each_reach_the_tenant(
    keyed: Keyed,
) -> None:
    engine, rows = keyed.engine, keyed.rows
    with engine.begin() as conn:
        before = conn.get_execution_options()
        for n in (1, 2, 3):
            conn.execute(rows.insert().execution_options(**TO_TENANT), {"n": n})
            assert conn.get_execution_options() == before, n
            assert "schema_translate_map" not in conn.get_execution_options()
        read = conn.scalars(sa.select(rows.c.n).order_by(rows.c.n).execution_options(**TO_TENANT))
        assert list(read) == [1, 2, 3]
    _assert_in_tenant(keyed, [1, 2, 3])


def test_two_statement_maps_on_one_connection_reach_the_tenant(
    keyed: Keyed,
) -> None:
    engine, rows = keyed.engine, keyed.rows
    with engine.begin() as conn:
        conn.execute(rows.insert().execution_options(**TO_TENANT), {"n": 1})
        conn.execute(rows.insert().execution_options(**TO_TENANT), [{"n": 2}, {"n": 3}])
    _assert_in_tenant(keyed, [1, 2, 3])


def test_statement_maps_in_one_session_each_reach_the_tenant(
    keyed: Keyed,
) -> None:
    engine, rows = keyed.engine, keyed.rows
    with Session(engine) as session:
        for n in (1, 2, 3):
            session.execute(rows.insert().execution_options(**TO_TENANT), {"n": n})
        read = session.scalars(
            sa.select(rows.c.n).order_by(rows.c.n).execution_options(**TO_TENANT)
        )
        assert list(read) == [1, 2, 3]
        session.commit()
    _assert_in_tenant(keyed, [1, 2, 3])


def test_maps_given_to_execute_each_reach_the_tenant(keyed: Keyed) -> None:
    engine, rows = keyed.engine, keyed.rows
    with engine.begin() as conn:
        before = conn.get_execution_options()
        for n in (1, 2, 3):
            conn.execute(rows.insert(), {"n": n}, execution_options=TO_TENANT)
        assert conn.get_execution_options() == before
        read = conn.scalars(sa.select(rows.c.n).order_by(rows.c.n), execution_options=TO_TENANT)
        assert list(read) == [1, 2, 3]
    _assert_in_tenant(keyed, [1, 2, 3])


def test_a_row_without_a_map_after_a_mapped_one_goes_to_the_default_schema(
    keyed: Keyed,
) -> None:
    engine, rows = keyed.engine, keyed.rows
    with engine.begin() as conn:
        conn.execute(rows.insert().execution_options(**TO_TENANT), {"n": 1})
        conn.execute(rows.insert(), {"n": 2})
        conn.execute(rows.insert().execution_options(**TO_TENANT), {"n": 3})
    in_tenant = _stored(keyed, TENANT)
    assert [n for _, n in in_tenant] == [1, 3]
    assert all(key >= TENANT_START for key, _ in in_tenant), in_tenant
    home = _stored(keyed, None)
    assert [n for _, n in home] == [2]
    assert all(key < TENANT_START for key, _ in home), home  # the default schema's sequence


def test_maps_on_the_engine_and_on_the_connection_still_reach_the_tenant(
    keyed: Keyed,
) -> None:
    engine, rows = keyed.engine, keyed.rows
    with engine.execution_options(**TO_TENANT).begin() as conn:
        before = conn.get_execution_options()
        conn.execute(rows.insert(), {"n": 1})
        conn.execute(rows.insert(), [{"n": 2}, {"n": 3}])
        assert conn.get_execution_options() is before
    with engine.begin() as conn:
        conn.execution_options(**TO_TENANT)
        before = conn.get_execution_options()
        conn.execute(rows.insert(), {"n": 4})
        conn.execute(rows.insert(), {"n": 5})
        assert conn.get_execution_options() is before
        assert list(conn.scalars(sa.select(rows.c.n).order_by(rows.c.n))) == [1, 2, 3, 4, 5]
    _assert_in_tenant(keyed, [1, 2, 3, 4, 5])


def test_a_connections_own_map_is_put_back_after_a_statements_map(
    keyed: Keyed,
) -> None:
    # the connection maps to EMPTY; the statement's map, given to execute(), outranks it
    engine, rows = keyed.engine, keyed.rows
    with engine.begin() as conn:
        conn.execution_options(schema_translate_map={None: EMPTY})
        before = conn.get_execution_options()
        conn.execute(rows.insert(), {"n": 1}, execution_options=TO_TENANT)
        assert conn.get_execution_options() is before
        assert list(conn.scalars(sa.select(rows.c.n))) == []  # EMPTY's table, as before
    _assert_in_tenant(keyed, [1])


def test_a_default_that_fails_under_a_statements_map_leaves_the_connection_as_it_was(
    keyed: Keyed,
) -> None:
    # EMPTY has no sequences: the default raises, and the connection keeps its options
    engine, rows = keyed.engine, keyed.rows
    to_empty = {"schema_translate_map": {None: EMPTY}}
    with engine.connect() as conn:
        before = conn.get_execution_options()
        with pytest.raises(sa.exc.StatementError) as raised:
            conn.execute(rows.insert().execution_options(**to_empty), {"n": 1})
        assert isinstance(raised.value.orig, SeqKeysError), raised.value
        assert conn.get_execution_options() == before
        assert "schema_translate_map" not in conn.get_execution_options()
        conn.rollback()
        conn.execute(rows.insert().execution_options(**TO_TENANT), {"n": 2})
        conn.commit()
    _assert_in_tenant(keyed, [2])
