"""A resync from a key column that does not hold integers: one clear InvalidSequenceError on
every engine, from resync_table_sequence, resync_pooled_sequence, their async twins and
``seqkeys resync``, and the sequence left as it was.

Before: SQLite compared a text MAX ('999') as text and said the sequence was already past it
(or a raw ValueError for 'abc'), MariaDB moved the sequence to '999' + 1 although 1000 was a
key, PostgreSQL wrapped "operator does not exist: bigint <= text".
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    InvalidSequenceError,
    PooledSequence,
    create_table_sequence,
    resync_pooled_sequence,
    resync_table_sequence,
    resync_table_sequence_async,
    sequences_table,
)
from sqlalchemy_seqkeys.cli import main
from sqlalchemy_seqkeys.pooled import resync_pooled_sequence_async
from sqlalchemy_seqkeys.sequences.table import read_next_value
from tests._helpers import tenant_schemas
from tests.backend._pooled import TABLE as POOLED_TABLE
from tests.conftest import AsyncDatabase

pytestmark = pytest.mark.backend

TEXT = "seqkeys_resync_text"
SEQ = "seqkeys_hostile_seq"
POOLED = "seqkeys_hostile_pooled"
#: the text MAX ('999') is below the numeric one (1000)
KEYS = ["999", "1000"]
NOT_INTEGERS = rf"column 'id' of table '{TEXT}' holds .*not an integer"


def _text_table(engine: Engine, keys: list[Any], key_type: Any = None) -> sa.MetaData:
    """TEXT holding ``keys`` (key_type None: SQLite's untyped column), SEQ at 5."""
    metadata = sa.MetaData()
    sequences_table(metadata)
    rows = sa.Table(TEXT, metadata, sa.Column("id", key_type, primary_key=True))
    metadata.drop_all(engine)
    if key_type is None:
        sequences_table(sa.MetaData()).create(engine)
        with engine.begin() as conn:
            conn.execute(sa.text(f"CREATE TABLE {TEXT} (id PRIMARY KEY)"))
    else:
        metadata.create_all(engine)
    if keys:
        with engine.begin() as conn:
            conn.execute(rows.insert(), [{"id": k} for k in keys])
    create_table_sequence(engine, SEQ, start=5)
    return metadata


def _drop_pooled(engine: Engine) -> None:
    PooledSequence(POOLED, table=POOLED_TABLE).drop(engine, checkfirst=True)
    sequences_table(sa.MetaData(), POOLED_TABLE).drop(engine, checkfirst=True)


@pytest.fixture
def text_keys(engine: Engine) -> Iterator[Engine]:
    """A text key column holding KEYS, a table sequence at 5 and a pooled sequence at 1."""
    _drop_pooled(engine)
    metadata = _text_table(engine, KEYS, sa.String(20))
    PooledSequence(POOLED, batch_size=10, table=POOLED_TABLE).create(engine)
    yield engine
    metadata.drop_all(engine)
    _drop_pooled(engine)


def _next(engine: Engine) -> int | None:
    with engine.connect() as conn:
        return read_next_value(conn, SEQ)


def test_a_text_key_column_is_refused_on_every_engine(text_keys: Engine) -> None:
    engine = text_keys
    with pytest.raises(InvalidSequenceError, match=NOT_INTEGERS):
        resync_table_sequence(engine, SEQ, TEXT, "id")
    assert _next(engine) == 5
    with pytest.raises(InvalidSequenceError, match=NOT_INTEGERS):
        resync_pooled_sequence(engine, POOLED, TEXT, "id", sequences_table=POOLED_TABLE)
    # neither moved: the pooled sequence still hands out its first block
    assert PooledSequence(POOLED, batch_size=10, table=POOLED_TABLE).next_value(engine) == 1
    assert _next(engine) == 5


def test_an_empty_text_key_column_is_refused_on_every_engine(engine: Engine) -> None:
    """No key to refuse: PostgreSQL refused the compare, wrapped as a driver failure."""
    _drop_pooled(engine)
    metadata = _text_table(engine, [], sa.String(20))
    PooledSequence(POOLED, batch_size=10, table=POOLED_TABLE).create(engine)
    refused = []
    try:
        for resync in (
            lambda: resync_table_sequence(engine, SEQ, TEXT, "id"),
            lambda: resync_pooled_sequence(
                engine, POOLED, TEXT, "id", sequences_table=POOLED_TABLE
            ),
        ):
            try:
                resync()  # where the engine compares a BIGINT with text: an empty table, no move
            except InvalidSequenceError as exc:
                refused.append(str(exc))
        assert all("is of type VARCHAR(20), not an integer type" in m for m in refused), refused
        if engine.dialect.name == "postgresql":
            assert len(refused) == 2  # SequenceAllocationError wrapping UndefinedFunction before
        assert _next(engine) == 5
        assert PooledSequence(POOLED, batch_size=10, table=POOLED_TABLE).next_value(engine) == 1
    finally:
        metadata.drop_all(engine)
        _drop_pooled(engine)


def test_the_command_prints_the_refusal_on_every_engine(
    text_keys: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    url = text_keys.url.render_as_string(hide_password=False)
    args = ["resync", "--url", url, "--sequence", SEQ, "--table", TEXT, "--column", "id"]
    assert main(args) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("seqkeys: InvalidSequenceError: column 'id' of table")
    assert "not an integer" in captured.err
    assert _next(text_keys) == 5


@pytest.mark.parametrize(
    ("keys", "shown"),
    [
        (["999", "42"], "'999'"),  # text, all digits: compared as text, MAX '999'
        ([999, "abc"], "'abc'"),  # was: ValueError: invalid literal for int()
        ([2.5, 1], "2.5"),  # would have moved the sequence to 3.5
        ([b"\x01", 3], r"b'\\x01'"),
    ],
)
def test_an_untyped_sqlite_column_is_checked_by_its_values(
    engines: Any, keys: list[Any], shown: str
) -> None:
    """SQLite's untyped column reflects no type: its MAX read back decides."""
    engine = engines.get("sqlite")
    metadata = _text_table(engine, keys)
    try:
        _drop_pooled(engine)
        PooledSequence(POOLED, batch_size=10, table=POOLED_TABLE).create(engine)
        holds = rf"column 'id' of table '{TEXT}' holds {shown} \(\w+\), not an integer"
        with pytest.raises(InvalidSequenceError, match=holds):
            resync_table_sequence(engine, SEQ, TEXT, "id")
        with pytest.raises(InvalidSequenceError, match=holds):
            resync_pooled_sequence(engine, POOLED, TEXT, "id", sequences_table=POOLED_TABLE)
        assert _next(engine) == 5
        assert PooledSequence(POOLED, batch_size=10, table=POOLED_TABLE).next_value(engine) == 1
    finally:
        metadata.drop_all(engine)
        _drop_pooled(engine)


def test_an_untyped_sqlite_column_of_integers_still_resyncs(engines: Any) -> None:
    engine = engines.get("sqlite")
    metadata = _text_table(engine, [7, 3])
    try:
        assert resync_table_sequence(engine, SEQ, TEXT, "id") == 8
    finally:
        metadata.drop_all(engine)


def test_the_async_twins_refuse_a_text_key_column(async_database: AsyncDatabase) -> None:
    sync = async_database.sync
    _drop_pooled(sync)
    metadata = _text_table(sync, KEYS, sa.String(20))
    PooledSequence(POOLED, batch_size=10, table=POOLED_TABLE).create(sync)

    async def run() -> list[BaseException | None]:
        engine = async_database.engine()
        outcomes: list[BaseException | None] = []
        try:
            try:
                await resync_table_sequence_async(engine, SEQ, TEXT, "id")
                outcomes.append(None)
            except InvalidSequenceError as exc:
                outcomes.append(exc)
            try:
                await resync_pooled_sequence_async(
                    engine, POOLED, TEXT, "id", sequences_table=POOLED_TABLE
                )
                outcomes.append(None)
            except InvalidSequenceError as exc:
                outcomes.append(exc)
        finally:
            await engine.dispose()
        return outcomes

    try:
        outcomes = asyncio.run(run())
        assert all(o is not None and "not an integer" in str(o) for o in outcomes), outcomes
        assert _next(sync) == 5
        assert PooledSequence(POOLED, batch_size=10, table=POOLED_TABLE).next_value(sync) == 1
    finally:
        metadata.drop_all(sync)
        _drop_pooled(sync)


def test_a_tenants_key_column_is_judged_by_the_max_in_its_schema(pg_engine: Engine) -> None:
    """Under a schema_translate_map the MAX judged is read from the tenant's table: a's
    text MAX is refused, b's integer one resyncs; public's table of that name plays no part."""
    schemas = ("seqkeys_hostile_a", "seqkeys_hostile_b")

    def run(sql: str) -> None:
        with pg_engine.begin() as conn:
            conn.execute(sa.text(sql))

    with tenant_schemas(pg_engine, *schemas) as (a, b):
        try:
            for tenant, key_type in ((a, sa.String(20)), (b, sa.BigInteger)):
                metadata = sa.MetaData()
                sequences_table(metadata)
                sa.Table(TEXT, metadata, sa.Column("id", key_type, primary_key=True))
                metadata.create_all(tenant)
                create_table_sequence(tenant, SEQ, start=5)
            run(f"INSERT INTO {schemas[0]}.{TEXT} VALUES ('999'), ('1000')")
            run(f"INSERT INTO {schemas[1]}.{TEXT} VALUES (999), (1000)")
            # the untranslated name finds this one, empty: read from it, a would find no
            # MAX to refuse and b none to move past
            run(f"CREATE TABLE {TEXT} (id VARCHAR(20) PRIMARY KEY)")
            with pytest.raises(InvalidSequenceError, match=NOT_INTEGERS):
                resync_table_sequence(a, SEQ, TEXT, "id")
            assert resync_table_sequence(b, SEQ, TEXT, "id") == 1001
        finally:
            run(f"DROP TABLE IF EXISTS {TEXT}")


# -- integer keys in columns whose declared type is no plain integer type: still resynced --

#: (engine, the key column's DDL): a PostgreSQL domain over BIGINT; SQLite type names
#: without "INT" (NUMERIC affinity, integers stored as integers)
INTEGER_KEYS_OTHERWISE_DECLARED = [
    ("postgresql", "seqkeys_key_domain"),
    ("sqlite", "SERIAL"),
    ("sqlite", "NUMERIC"),
]


@pytest.mark.parametrize(("name", "declared"), INTEGER_KEYS_OTHERWISE_DECLARED)
def test_integer_keys_of_a_type_reflection_does_not_call_integer(
    engines: Any, name: str, declared: str
) -> None:
    engine = engines.get(name)
    with engine.begin() as conn:
        conn.execute(sa.text(f"DROP TABLE IF EXISTS {TEXT}"))
        if name == "postgresql":
            conn.execute(sa.text(f"DROP DOMAIN IF EXISTS {declared}"))
            conn.execute(sa.text(f"CREATE DOMAIN {declared} AS bigint"))
        conn.execute(sa.text(f"CREATE TABLE {TEXT} (id {declared} PRIMARY KEY)"))
        conn.execute(sa.text(f"INSERT INTO {TEXT} (id) VALUES (1000), (999)"))
    sequences_table(sa.MetaData()).create(engine, checkfirst=True)
    create_table_sequence(engine, SEQ, start=5, checkfirst=True)
    try:
        assert resync_table_sequence(engine, SEQ, TEXT, "id") == 1001
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {TEXT}"))
            if name == "postgresql":
                conn.execute(sa.text(f"DROP DOMAIN IF EXISTS {declared}"))
        sequences_table(sa.MetaData()).drop(engine, checkfirst=True)


#: a column type SQLAlchemy's reflection does not know (it would warn) beside the key
UNKNOWN_TYPE = {"postgresql": "point", "mysql": "INET6"}


@pytest.mark.parametrize("name", sorted(UNKNOWN_TYPE))
def test_a_resync_reflects_nothing_so_an_unknown_column_type_never_warns(
    engines: Any, name: str
) -> None:
    """Run as a user with warnings as errors (the changelog's deprecation policy) would."""
    import warnings

    engine = engines.get(name)
    with engine.begin() as conn:
        conn.execute(sa.text(f"DROP TABLE IF EXISTS {TEXT}"))
        conn.execute(
            sa.text(f"CREATE TABLE {TEXT} (id BIGINT PRIMARY KEY, other {UNKNOWN_TYPE[name]})")
        )
        conn.execute(sa.text(f"INSERT INTO {TEXT} (id) VALUES (1000)"))
    sequences_table(sa.MetaData()).create(engine, checkfirst=True)
    create_table_sequence(engine, SEQ, start=5, checkfirst=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert resync_table_sequence(engine, SEQ, TEXT, "id") == 1001
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {TEXT}"))
        sequences_table(sa.MetaData()).drop(engine, checkfirst=True)
