"""Hostile names: every strategy that takes a name, on every engine, moves the sequence named.

A name is a bound value where it is data (a sequences-table row, a catalog
lookup) and a quoted identifier where it is SQL text; never the one reused as
the other. Each name below has a *twin* that a mix-up would reach instead
(``q%x`` and ``q%%x``, ``o'b`` and ``o''b``, ...): each test takes values from
both and moves one, then checks that exactly that one moved. A canary table
checks that no injection-shaped name executed anything. Names over an engine's
limit are refused with a SeqKeysError that names the limit, before any
statement is sent: PostgreSQL keeps only the first 63 bytes of an identifier,
so a longer name would silently be another sequence.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.engine import Engine

import sqlalchemy_seqkeys.alembic  # noqa: F401 - registers the operations on op
from sqlalchemy_seqkeys import (
    BitReversedSequence,
    PooledSequence,
    SeqKeysError,
    TableSequence,
    create_table_sequence,
    drop_table_sequence,
    resync_pooled_sequence,
    resync_pooled_sequence_async,
    resync_table_sequence,
    reverse_bits,
    sequences_table,
)
from sqlalchemy_seqkeys._dialect import incrementing_sequences
from sqlalchemy_seqkeys.sequences.table import read_next_value
from tests.conftest import AsyncDatabase

pytestmark = pytest.mark.backend

TABLE = "seqkeys_hn_sequences"
CANARY = "seqkeys_hn_canary"

#: names a quoting or %-escaping mix-up gets wrong; an injection-shaped one of each quote
HOSTILE = [
    "q%x",
    "pct%%two",
    "o'brien",
    'dq"name',
    "back`tick",
    "dot.ted",
    "spa ced",
    "naïve_ключ_日本",
    f"x'); DROP TABLE {CANARY}; --",
    f'x"; DROP TABLE {CANARY}; --',
    f"x`; DROP TABLE {CANARY}; --",
]

#: a data table and key column to resync from, named as hostile, and a twin of each
DATA = "da%ta 'tab\"le`.ü"
COLUMN = "i%d 'c\"ol`.ü"
#: Spanner identifiers are letters, digits and underscores: its data table is plain
PLAIN_DATA, PLAIN_COLUMN = "seqkeys_hn_data", "id"


def twin(name: str) -> str:
    """The name a quoting or escaping mix-up would reach instead of ``name``."""
    for char, doubled in (("%", "%%"), ("'", "''"), ('"', '""'), ("`", "``")):
        if char in name:
            return name.replace(char, doubled)
    for char in (".", " "):
        if char in name:
            return name.replace(char, "_")
    return name + "_"


def is_spanner(engine: Engine) -> bool:
    return engine.dialect.name.startswith("spanner")


def native(engine: Engine) -> bool:
    with engine.connect() as conn:  # a dialect learns what the server has when it connects
        return incrementing_sequences(conn.dialect)


def data_names(engine: Engine) -> tuple[str, str]:
    return (PLAIN_DATA, PLAIN_COLUMN) if is_spanner(engine) else (DATA, COLUMN)


@contextmanager
def statements(engine: Engine) -> Iterator[list[str]]:
    """The statements sent to ``engine`` meanwhile."""
    sent: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        sent.append(statement)

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)


_Made = dict[str, tuple[Engine, sa.MetaData, dict[str, sa.Table]]]


@pytest.fixture(scope="module")
def made() -> Iterator[_Made]:
    """The tables of :func:`prepare`, created once per engine for the module, dropped at its end."""
    created: _Made = {}
    yield created
    for engine, metadata, _ in created.values():
        metadata.drop_all(engine)


@pytest.fixture
def setting(engine: Engine, made: _Made) -> dict[str, sa.Table]:
    """:func:`prepare` for the ``engine`` fixture's engine."""
    return prepare(engine, made)


def prepare(engine: Engine, made: _Made) -> dict[str, sa.Table]:
    """A canary table, the library's sequences table, and a data table and its twin.

    The data table holds key 5000, its twin 9000: a resync that reads the twin
    would move a sequence to 9001.
    """
    key = engine.url.render_as_string()
    if key in made:
        return made[key][2]
    data, column = data_names(engine)
    metadata = sa.MetaData()
    canary = sa.Table(CANARY, metadata, sa.Column("id", sa.BigInteger, primary_key=True))
    sequences_table(metadata, TABLE)
    tables = {"canary": canary}
    for role, name in (("data", data), ("twin", twin(data))):
        tables[role] = sa.Table(
            name,
            metadata,
            sa.Column(column, sa.BigInteger, primary_key=True, autoincrement=False),
        )
    metadata.drop_all(engine)
    metadata.create_all(engine)
    made[key] = (engine, metadata, tables)
    with engine.begin() as conn:
        conn.execute(tables["data"].insert(), [{column: 7}, {column: 5000}])
        conn.execute(tables["twin"].insert(), [{column: 9000}])
        conn.execute(canary.insert(), [{"id": 1}])
    return tables


def assert_canary(engine: Engine) -> None:
    with engine.connect() as conn:
        assert sa.inspect(conn).has_table(CANARY)
        assert conn.scalar(sa.text(f"SELECT COUNT(*) FROM {CANARY}")) == 1


# -- issue 21: a % in a pooled sequence's name moved another sequence -------------------


@pytest.mark.parametrize("name", ["q%x", "q%%x"])
def test_resync_moves_the_pooled_sequence_named_not_its_percent_twin(
    engine: Engine, setting: dict[str, sa.Table], name: str
) -> None:
    other = "q%%x" if name == "q%x" else "q%x"
    data, column = data_names(engine)
    made = [PooledSequence(n, batch_size=1, table=TABLE) for n in (name, other)]
    for sequence in made:
        sequence.drop(engine, checkfirst=True)
        sequence.create(engine)
    try:
        assert resync_pooled_sequence(engine, name, data, column, sequences_table=TABLE) == 5001
        assert PooledSequence(name, batch_size=1, table=TABLE).next_value(engine) == 5001
        assert PooledSequence(other, batch_size=1, table=TABLE).next_value(engine) == 1
    finally:
        for sequence in made:
            sequence.drop(engine, checkfirst=True)


def test_resync_finds_a_percent_named_pooled_sequence_alone(
    engine: Engine, setting: dict[str, sa.Table]
) -> None:
    data, column = data_names(engine)
    sequence = PooledSequence("p%x", batch_size=1, table=TABLE)
    sequence.drop(engine, checkfirst=True)
    sequence.create(engine)
    try:
        assert sequence.next_value(engine) == 1
        assert resync_pooled_sequence(engine, "p%x", data, column, sequences_table=TABLE) == 5001
        assert PooledSequence("p%x", batch_size=1, table=TABLE).next_value(engine) == 5001
    finally:
        sequence.drop(engine, checkfirst=True)


# -- every strategy, every hostile name ---------------------------------------------------


@pytest.mark.parametrize("name", HOSTILE)
def test_pooled_sequence_create_mint_resync_drop(
    engine: Engine, setting: dict[str, sa.Table], name: str
) -> None:
    data, column = data_names(engine)
    pair = {n: PooledSequence(n, batch_size=10, table=TABLE) for n in (name, twin(name))}
    for sequence in pair.values():
        sequence.drop(engine, checkfirst=True)
        sequence.create(engine)
    try:
        assert pair[name].next_values(engine, 3) == [1, 2, 3]
        assert pair[twin(name)].next_values(engine, 2) == [1, 2]
        assert resync_pooled_sequence(engine, name, data, column, sequences_table=TABLE) == 5001
        # already there: None (MariaDB returns the value it stands at, as documented)
        again = resync_pooled_sequence(engine, name, data, column, sequences_table=TABLE)
        assert again is None or (again == 5001 and engine.dialect.name == "mysql")
        # processes started afresh: the one resynced goes on past the data, the twin as it was
        assert PooledSequence(name, batch_size=10, table=TABLE).next_values(engine, 2) == [
            5001,
            5002,
        ]
        assert PooledSequence(twin(name), batch_size=10, table=TABLE).next_values(engine, 2) == [
            11,
            12,
        ]
        assert pair[name].next_value(engine) == 4  # its block is still its own
    finally:
        for sequence in pair.values():
            sequence.drop(engine)
    with engine.connect() as conn:
        if native(engine):
            assert not sa.inspect(conn).has_sequence(name)
            assert not sa.inspect(conn).has_sequence(twin(name))
        else:
            assert read_next_value(conn, name, table=TABLE) is None
    assert_canary(engine)


@pytest.mark.parametrize("name", HOSTILE)
def test_pooled_sequence_alembic_operations(
    engine: Engine, setting: dict[str, sa.Table], name: str
) -> None:
    data, column = data_names(engine)
    other = PooledSequence(twin(name), batch_size=10, table=TABLE)
    other.drop(engine, checkfirst=True)
    other.create(engine)
    PooledSequence(name, batch_size=10, table=TABLE).drop(engine, checkfirst=True)
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            op = Operations(MigrationContext.configure(conn))
            op.create_pooled_sequence(name, 10, start=20, table=TABLE)
            assert PooledSequence(name, batch_size=10, table=TABLE).next_value(conn) == 20
            op.resync_pooled_sequence(name, data, column, sequences_table=TABLE)
            assert PooledSequence(name, batch_size=10, table=TABLE).next_value(conn) == 5001
            assert PooledSequence(twin(name), batch_size=10, table=TABLE).next_value(conn) == 1
            op.drop_pooled_sequence(name, 10, start=20, table=TABLE)
            if native(engine):
                assert not sa.inspect(conn).has_sequence(name)
                assert sa.inspect(conn).has_sequence(twin(name))
            else:
                assert read_next_value(conn, name, table=TABLE) is None
                assert read_next_value(conn, twin(name), table=TABLE) == 11
    finally:
        PooledSequence(name, batch_size=10, table=TABLE).drop(engine, checkfirst=True)
        other.drop(engine, checkfirst=True)
    assert_canary(engine)


def spanner_refuses(name: str) -> bool:
    return not all(c.isascii() and (c.isalnum() or c == "_") for c in name)


@pytest.mark.parametrize("batch_size", [1, 5])
@pytest.mark.parametrize("name", HOSTILE)
def test_bit_reversed_sequence_create_mint_drop(
    engine: Engine, setting: dict[str, sa.Table], name: str, batch_size: int
) -> None:
    pair = {
        n: BitReversedSequence(n, start=start, batch_size=batch_size, table=TABLE)
        for n, start in ((name, 1), (twin(name), 1000))
    }
    if is_spanner(engine) and spanner_refuses(name):
        with statements(engine) as sent, pytest.raises(SeqKeysError, match="letter") as caught:
            pair[name].create(engine)
        assert sent == []  # refused before any statement
        assert "Spanner" in str(caught.value)
        with pytest.raises(SeqKeysError, match="letter"):
            pair[name].next_value(engine)
        return
    for sequence in pair.values():
        sequence.drop(engine, checkfirst=True)
        sequence.create(engine)
    try:
        with engine.begin() as conn:
            mine = [pair[name].next_value(conn) for _ in range(3)]
            theirs = [pair[twin(name)].next_value(conn) for _ in range(3)]
        assert mine == [reverse_bits(c) for c in (1, 2, 3)]
        assert theirs == [reverse_bits(c) for c in (1000, 1001, 1002)]
    finally:
        for sequence in pair.values():
            sequence.drop(engine)
    assert_canary(engine)


@pytest.mark.parametrize("mode", ["in_transaction", "separate", "batch", "async_batch"])
@pytest.mark.parametrize("name", HOSTILE)
def test_table_sequence_create_mint_resync_drop(
    engine: Engine, setting: dict[str, sa.Table], name: str, mode: str
) -> None:
    data, column = data_names(engine)
    for leftover in (name, twin(name)):  # of a test that failed midway
        drop_table_sequence(engine, leftover, table=TABLE, checkfirst=True)
    assert create_table_sequence(engine, name, table=TABLE)
    assert create_table_sequence(engine, twin(name), start=100, table=TABLE)
    extra: dict[str, Any] = {
        "in_transaction": {},
        "separate": {},
        "batch": {"batch_size": 4},
        "async_batch": {"batch_size": 4, "low_watermark": 1},
    }[mode]
    mine = TableSequence(name, mode=mode, table=TABLE, **extra)
    theirs = TableSequence(twin(name), mode=mode, table=TABLE, **extra)
    assert mine.next_values(engine, 2) == [1, 2]
    assert theirs.next_values(engine, 2) == [100, 101]
    assert resync_table_sequence(engine, name, data, column, sequences_table=TABLE) == 5001
    # a Table object works as well; a second run changes nothing
    table = setting["data"]
    assert resync_table_sequence(engine, name, table, column, sequences_table=TABLE) == 5001
    with engine.connect() as conn:
        assert read_next_value(conn, name, table=TABLE) == 5001
        stored = read_next_value(conn, twin(name), table=TABLE)
        # a block of 4 was taken (async_batch may have refilled in the background)
        assert stored == 102 if mode in ("in_transaction", "separate") else stored in (104, 108)
    assert TableSequence(name, mode=mode, table=TABLE, **extra).next_value(engine) == 5001
    assert drop_table_sequence(engine, name, table=TABLE)
    assert drop_table_sequence(engine, twin(name), table=TABLE)
    assert_canary(engine)


# -- the longest names, and names over the limit ------------------------------------------


def longest(engine: Engine) -> list[str]:
    """The longest names a native sequence may have here, and their twins (last char differs)."""
    if engine.dialect.name == "postgresql":  # 63 bytes: ASCII, and two-byte characters
        return ["a" * 62 + "1", "a" * 62 + "2", "é" * 31 + "1", "é" * 31 + "2"]
    return ["a" * 63 + "1", "a" * 63 + "2"]  # the library's limit: 64 characters


def test_the_longest_names_are_distinct_sequences(
    engine: Engine, setting: dict[str, sa.Table]
) -> None:
    data, column = data_names(engine)
    names = longest(engine)
    pooled = [
        PooledSequence(n, batch_size=10, start=1 + 100 * i, table=TABLE)
        for i, n in enumerate(names)
    ]
    reversed_ = [
        BitReversedSequence(n, start=1 + 100 * i, table=TABLE) for i, n in enumerate(names)
    ]
    for sequence in [*pooled, *reversed_]:
        sequence.drop(engine, checkfirst=True)
    try:
        for sequence in pooled:
            sequence.create(engine)
        assert [s.next_value(engine) for s in pooled] == [1 + 100 * i for i in range(len(names))]
        assert resync_pooled_sequence(engine, names[0], data, column, sequences_table=TABLE) == 5001
        fresh = [PooledSequence(n, batch_size=10, table=TABLE).next_value(engine) for n in names]
        assert fresh == [5001, *(11 + 100 * i for i in range(1, len(names)))]
        for sequence in pooled:
            sequence.drop(engine)
        for sequence in reversed_:
            sequence.create(engine)
        values = [s.next_value(engine) for s in reversed_]
        assert values == [reverse_bits(1 + 100 * i) for i in range(len(names))]
    finally:
        for sequence in [*pooled, *reversed_]:
            sequence.drop(engine, checkfirst=True)


def test_names_over_the_librarys_limit_are_refused_on_declaration() -> None:
    for declare in (
        lambda n: PooledSequence(n),
        lambda n: BitReversedSequence(n),
        lambda n: TableSequence(n, mode="batch"),
    ):
        with pytest.raises(SeqKeysError, match="at most 64"):
            declare("a" * 69 + "1")


def test_postgresql_names_over_63_bytes_are_refused_not_truncated(
    pg_engine: Engine, made: _Made
) -> None:
    engine = pg_engine
    prepare(engine, made)
    # PostgreSQL would keep the first 63 bytes of each: the same sequence twice
    names = ["a" * 63 + "1", "a" * 63 + "2", "é" * 31 + "xy"]
    with statements(engine) as sent:
        for name in names:
            for sequence in (
                PooledSequence(name, batch_size=10, table=TABLE),
                BitReversedSequence(name, table=TABLE),
                BitReversedSequence(name, batch_size=5, table=TABLE),
            ):
                for call in (sequence.create, sequence.next_value, sequence.drop):
                    with pytest.raises(SeqKeysError, match="63 bytes"):
                        call(engine)
            with pytest.raises(SeqKeysError, match="63 bytes"):
                resync_pooled_sequence(engine, name, DATA, COLUMN, sequences_table=TABLE)
    assert not [s for s in sent if "sequence" in s.lower() or "nextval" in s.lower()]
    with engine.connect() as conn:
        assert not any(n.startswith("aaaa") for n in sa.inspect(conn).get_sequence_names())
    # a data table or column named over the limit would be read as another one
    long_table = DATA + "x" * (64 - len(DATA.encode()))
    with pytest.raises(SeqKeysError, match="63 bytes"):
        resync_table_sequence(engine, "n", long_table, COLUMN, sequences_table=TABLE)
    with pytest.raises(SeqKeysError, match="63 bytes"):
        resync_pooled_sequence(engine, "n", DATA, "c" * 64, sequences_table=TABLE)


def test_postgresql_sequences_table_names_over_63_bytes_are_refused(pg_engine: Engine) -> None:
    # two such tables would be one: PostgreSQL keeps the first 63 bytes of each
    long_table = "seqkeys_hn_" + "t" * 60
    for call in (
        lambda: create_table_sequence(pg_engine, "n", table=long_table),
        lambda: TableSequence("n", mode="separate", table=long_table).next_value(pg_engine),
    ):
        with pytest.raises(SeqKeysError, match="63 bytes"):
            call()
    with pg_engine.connect() as conn:
        assert not any(t.startswith("seqkeys_hn_ttt") for t in sa.inspect(conn).get_table_names())


def test_mariadb_refuses_names_it_cannot_hold(mysql_engine: Engine, made: _Made) -> None:
    engine = mysql_engine
    prepare(engine, made)
    if not native(engine):
        pytest.skip("MySQL: a pooled sequence is a sequences-table row, any name fits")
    # outside the Basic Multilingual Plane: MariaDB's identifiers cannot hold it
    with statements(engine) as sent:
        for make in (
            lambda n: PooledSequence(n, batch_size=10, table=TABLE),
            lambda n: BitReversedSequence(n, table=TABLE),
        ):
            with pytest.raises(SeqKeysError, match="U\\+FFFF"):
                make("emoji_😀").create(engine)
    assert not [s for s in sent if "😀" in s]
    # 64 characters, but a file name (its table's) longer than the file system holds
    wide = "日本" * 32
    for sequence in (PooledSequence(wide, batch_size=10, table=TABLE), BitReversedSequence(wide)):
        with pytest.raises(SeqKeysError, match="file name"):
            sequence.create(engine)
    with engine.connect() as conn:
        assert wide not in sa.inspect(conn).get_sequence_names()


def test_spanner_refuses_names_its_identifiers_forbid_before_any_io(
    spanner_engine: Engine,
) -> None:
    engine = spanner_engine
    with statements(engine) as sent:
        for name in ("q%x", "1starts_with_a_digit", "spa ced", "naïve"):
            with pytest.raises(SeqKeysError, match="Spanner"):
                BitReversedSequence(name).create(engine)
        for table, column in ((DATA, "id"), ("plain", COLUMN)):
            with pytest.raises(SeqKeysError, match="Spanner"):
                resync_table_sequence(engine, "n", table, column, sequences_table=TABLE)
            with pytest.raises(SeqKeysError, match="Spanner"):
                resync_pooled_sequence(engine, "n", table, column, sequences_table=TABLE)
    assert sent == []


def test_alembic_operations_refuse_names_over_the_limit_before_any_io(
    pg_engine: Engine, made: _Made
) -> None:
    engine = pg_engine
    prepare(engine, made)
    name = "a" * 63 + "1"  # PostgreSQL would create (or drop) "aaa...a", 63 bytes
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        op = Operations(MigrationContext.configure(conn))
        with statements(engine) as sent:
            for run in (
                lambda: op.create_pooled_sequence(name, 10, table=TABLE),
                lambda: op.drop_pooled_sequence(name, 10, table=TABLE),
                lambda: op.resync_pooled_sequence(name, DATA, COLUMN, sequences_table=TABLE),
                lambda: op.create_bit_reversed_sequence(name),
                lambda: op.drop_bit_reversed_sequence(name),
                lambda: op.resync_table_sequence(
                    "n", DATA + "x" * 50, COLUMN, sequences_table=TABLE
                ),
            ):
                with pytest.raises(SeqKeysError, match="63 bytes"):
                    run()
        assert sent == []
        assert not any(n.startswith("aaaa") for n in sa.inspect(conn).get_sequence_names())


def test_async_drivers_move_the_pooled_sequence_named(
    async_server_database: AsyncDatabase, made: _Made
) -> None:
    """asyncpg, psycopg's async side, asyncmy and aiomysql: the same names, the same sequences."""
    sync = async_server_database.sync
    prepare(sync, made)
    names = ("q%x", "q%%x", "o'b`x")
    made_here = [PooledSequence(n, batch_size=10, table=TABLE) for n in names]
    for sequence in made_here:
        sequence.drop(sync, checkfirst=True)
        sequence.create(sync)

    async def main() -> tuple[list[int], int | None, list[int]]:
        engine = async_server_database.engine()
        try:
            first = [await s.next_value_async(engine) for s in made_here]
            moved = await resync_pooled_sequence_async(
                engine, "q%x", DATA, COLUMN, sequences_table=TABLE
            )
            fresh = [await PooledSequence(n, batch_size=10).next_value_async(engine) for n in names]
            return first, moved, fresh
        finally:
            await engine.dispose()

    try:
        first, moved, fresh = asyncio.run(main())
    finally:
        for sequence in made_here:
            sequence.drop(sync, checkfirst=True)
    assert first == [1, 1, 1]
    assert moved == 5001
    assert fresh == [5001, 11, 11]
