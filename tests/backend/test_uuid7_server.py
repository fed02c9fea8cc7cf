"""server_uuid7() as a server default on live servers; client and server v7 keys in one table.

PostgreSQL 18 mints the keys of rows inserted without one (the ORM reads them
back with RETURNING); new_uuid7() keys from the client share the table. Every
key is version 7, carries a millisecond bracketed by the server's clock read
just before and just after its insert, and time windows select exactly their
rows. PostgreSQL before 18 and MariaDB before 11.7 refuse the DDL up front.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from sqlalchemy_seqkeys import CombGuid
from sqlalchemy_seqkeys.timerange import uuid7_bounds
from sqlalchemy_seqkeys.uuid7 import new_uuid7, uuid7_timestamp
from sqlalchemy_seqkeys.uuid7_sql import UnsupportedServerFunctionError, server_uuid7

pytestmark = pytest.mark.backend

UTC = timezone.utc
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MS = timedelta(milliseconds=1)
ROWS = 240


def make_model() -> tuple[type[Any], sa.MetaData]:
    class Base(DeclarativeBase):
        pass

    class Event(Base):
        __tablename__ = "seqkeys_uuidv7_events"
        id: Mapped[uuid.UUID] = mapped_column(
            CombGuid(), primary_key=True, server_default=server_uuid7()
        )
        source: Mapped[str] = mapped_column(sa.String(6))
        n: Mapped[int] = mapped_column(sa.Integer)
        at: Mapped[datetime] = mapped_column(
            sa.DateTime(timezone=True), server_default=sa.func.clock_timestamp()
        )

    return Event, Base.metadata


@pytest.fixture
def model(pg18_engine: Engine) -> Any:
    event, metadata = make_model()
    metadata.drop_all(pg18_engine)
    metadata.create_all(pg18_engine)
    yield event
    metadata.drop_all(pg18_engine)


def ms_of(value: uuid.UUID) -> int:
    return value.int >> 80


def rand_a(value: uuid.UUID) -> int:
    return (value.int >> 64) & 0xFFF


def ns_since_epoch(t: datetime) -> int:
    return (t - EPOCH) // timedelta(microseconds=1) * 1_000


def test_orm_reads_the_servers_key_back(pg18_engine: Engine, model: Any) -> None:
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    with Session(pg18_engine) as session:
        one = model(source="server", n=0)
        session.add(one)
        # many rows in one flush (batched INSERT .. RETURNING): each object
        # must get its own row's key, not a neighbour's
        many = [model(source="server", n=i) for i in range(1, 101)]
        session.add_all(many)
        sa.event.listen(pg18_engine, "before_cursor_execute", record)
        try:
            session.flush()
            flushed = {e.n: e.id for e in [one, *many]}
        finally:
            sa.event.remove(pg18_engine, "before_cursor_execute", record)
        session.commit()
        in_db = dict(session.execute(sa.select(model.n, model.id)).all())
    # the keys came back with the INSERTs: no SELECT after them
    assert statements
    assert all(s.startswith("INSERT") and "RETURNING" in s for s in statements), statements
    assert all(isinstance(key, uuid.UUID) and key.version == 7 for key in flushed.values())
    assert flushed == in_db
    assert len(set(in_db.values())) == 101


def test_client_and_server_keys_interleaved(pg18_engine: Engine, model: Any) -> None:
    table = model.__table__
    clock = sa.select(sa.func.clock_timestamp())
    rows = []  # (n, source, id, server clock before, server clock after, at)
    with pg18_engine.begin() as conn:  # one session: PostgreSQL's uuidv7() is monotonic in it
        for n in range(ROWS):
            source = "client" if n % 3 else "server"  # two client keys per server key
            values: dict[str, Any] = {"source": source, "n": n}
            before = conn.scalar(clock)
            if source == "client":
                values["id"] = new_uuid7()
            key, at = conn.execute(
                sa.insert(table).values(**values).returning(table.c.id, table.c.at)
            ).one()
            after = conn.scalar(clock)
            rows.append((n, source, key, before, after, at))

    for n, source, key, before, after, at in rows:
        assert key.version == 7, (n, source, key)
        assert key.variant == uuid.RFC_4122
        # the key's millisecond lies between the server's clock just before and
        # just after its insert (same host: one clock for client and server)
        stamp = uuid7_timestamp(key)
        assert before - MS < stamp <= after, (n, source, key, before, after)
        # ... and so within those few milliseconds of the row's own clock_timestamp()
        assert before <= at <= after
        assert abs(at - stamp) <= after - before + MS
        if source == "server":
            # PostgreSQL 18: rand_a is the fraction of the millisecond in 1/4096 ms
            earliest = ms_of(key) * 1_000_000 + rand_a(key) * 1_000_000 // 4096
            latest = ms_of(key) * 1_000_000 + (rand_a(key) + 1) * 1_000_000 // 4096
            assert ns_since_epoch(before) <= latest
            assert earliest <= ns_since_epoch(after) + 1_000
        else:
            # new_uuid7: rand_a is the top of a counter seeded below 2**41
            assert rand_a(key) < 2048

    for source in ("client", "server"):
        keys = [key for _, s, key, *_ in rows if s == source]
        assert keys == sorted(keys), f"{source} keys are not increasing"

    keys = [key for _, _, key, *_ in rows]
    stamps = sorted({uuid7_timestamp(k) for k in keys})
    assert len(stamps) >= 10, "the rows should span many milliseconds"
    start = stamps[len(stamps) // 3]
    end = stamps[2 * len(stamps) // 3] + timedelta(microseconds=500)  # a sub-ms end
    lo, hi = uuid7_bounds(start, end)
    with pg18_engine.connect() as conn:
        window = conn.scalars(
            sa.select(table.c.id).where(table.c.id >= lo, table.c.id < hi).order_by(table.c.id)
        ).all()
        everything = conn.scalars(sa.select(table.c.id).order_by(table.c.id)).all()
    expected = sorted(k for k in keys if start <= uuid7_timestamp(k) < end)
    assert window == expected
    assert {uuid7_timestamp(k) for k in window} == {t for t in stamps if start <= t < end}
    assert {"client", "server"} == {s for _, s, key, *_ in rows if key in set(window)}
    assert everything == sorted(keys)  # PostgreSQL's uuid order is Python's


def test_reflected_default_is_uuidv7(pg18_engine: Engine, model: Any) -> None:
    column = next(
        c for c in sa.inspect(pg18_engine).get_columns(model.__tablename__) if c["name"] == "id"
    )
    assert column["default"] == "uuidv7()"


def test_autogenerate_sees_no_difference(pg18_engine: Engine, model: Any) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    import sqlalchemy_seqkeys.alembic

    sqlalchemy_seqkeys.alembic.register()  # where Alembic has not loaded the plugin

    with pg18_engine.connect() as conn:
        ours = model.__tablename__  # other tests' tables may share the database
        opts = {
            "compare_server_default": True,
            "autogenerate_plugins": ["alembic.autogenerate.*", "seqkeys"],  # as env.py names it
            "include_name": lambda name, type_, parents: type_ != "table" or name == ours,
        }
        diffs = compare_metadata(MigrationContext.configure(conn, opts=opts), model.metadata)
    assert diffs == []


def test_server_default_needs_postgresql_18(pg_engine: Engine) -> None:
    _, metadata = make_model()
    version = pg_engine.dialect.server_version_info or ()
    if version >= (18,):
        metadata.create_all(pg_engine)
        metadata.drop_all(pg_engine)
        return
    with pytest.raises(UnsupportedServerFunctionError, match=r"PostgreSQL 1\d.* default=new_uuid7"):
        metadata.create_all(pg_engine)
    assert not sa.inspect(pg_engine).has_table("seqkeys_uuidv7_events")


def test_server_default_needs_mariadb_11_7(mysql_engine: Engine) -> None:
    _, metadata = make_model()
    dialect = mysql_engine.dialect
    with mysql_engine.connect():  # the dialect learns the server's version
        pass
    if getattr(dialect, "is_mariadb", False) and (dialect.server_version_info or ()) >= (11, 7):
        metadata.create_all(mysql_engine)
        metadata.drop_all(mysql_engine)
        return
    with pytest.raises(UnsupportedServerFunctionError, match="default=new_uuid7"):
        metadata.create_all(mysql_engine)
    assert not sa.inspect(mysql_engine).has_table("seqkeys_uuidv7_events")
