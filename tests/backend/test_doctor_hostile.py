"""seqkeys doctor against databases that are not as it expects, without harm or false alarms.

An application table named like doctor's temporary table survives a check that
fails; a pooled key column whose server default is nextval of its own pooled
sequence is no collision (nextval of another sequence still is); a table locked
by another transaction is reported within seconds, not waited on forever, and
the caller's lock settings are left as they were; a PostgreSQL name cut to 63
bytes is found; TypeID keys are checked.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    PooledSequence,
    TableSequence,
    TypeIDType,
    create_table_sequence,
    doctor,
    new_uuid7,
    sequences_table,
    typeid_default,
)
from sqlalchemy_seqkeys.cli import main
from tests.backend.test_doctor import fresh_engine, problems, write_models

pytestmark = pytest.mark.backend


def _statuses(report: Any, check: str, subject: str) -> list[str]:
    return [f.status for f in report.findings if (f.check, f.subject) == (check, subject)]


# -- 1. an application table named like doctor's temporary table -----------------------


@pytest.mark.filterwarnings("ignore:Did not recognize type 'pg_lsn'")
@pytest.mark.parametrize(
    ("name", "ddl"),
    [
        ("sqlite", "CREATE TABLE doc_events (id PRIMARY KEY)"),  # no declared type
        ("postgresql", "CREATE TABLE doc_events (id pg_lsn PRIMARY KEY)"),  # unknown type
        ("mysql", "CREATE TABLE doc_events (id BINARY(16) PRIMARY KEY)"),
    ],
)
def test_an_application_table_named_like_the_temporary_table_survives(
    engines: Any, name: str, ddl: str
) -> None:
    metadata = sa.MetaData()
    sa.Table("doc_events", metadata, sa.Column("id", sa.Uuid, primary_key=True, default=new_uuid7))
    with fresh_engine(engines, name) as (engine, _):
        with engine.begin() as conn:
            conn.exec_driver_sql(ddl)
            conn.exec_driver_sql("CREATE TABLE seqkeys_doctor_order (note varchar(20))")
            conn.exec_driver_sql("INSERT INTO seqkeys_doctor_order VALUES ('precious')")
        doctor(engine, metadata)
        with engine.connect() as conn:
            kept = conn.exec_driver_sql("SELECT note FROM seqkeys_doctor_order").scalars().all()
            tables = sa.inspect(conn).get_table_names()
    assert kept == ["precious"]
    assert sorted(t for t in tables if t.startswith("seqkeys_doctor")) == ["seqkeys_doctor_order"]


# -- 2. a pooled key column whose default is nextval of that same sequence --------------


def _pooled_orders(name: str, schema: str | None = None) -> tuple[sa.MetaData, sa.Table]:
    metadata = sa.MetaData()
    order_id = PooledSequence(name, batch_size=50, schema=schema, metadata=metadata)
    orders = sa.Table(
        "doc_orders",
        metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, default=order_id),
        sa.Column("src", sa.String(10)),
    )
    return metadata, orders


_SET_DEFAULT = {
    "postgresql": "ALTER TABLE doc_orders ALTER COLUMN id SET DEFAULT nextval('{seq}')",
    "mysql": "ALTER TABLE doc_orders MODIFY id BIGINT NOT NULL DEFAULT NEXTVAL({seq})",
}


@pytest.mark.parametrize(
    ("name", "sequence", "seq_sql"),
    [
        ("postgresql", "doc_order_id", "doc_order_id"),
        ("postgresql", "Doc Order-Id", '"Doc Order-Id"'),
        ("postgresql", "doc_order_id", "public.doc_order_id"),
        ("mysql", "doc_order_id", "doc_order_id"),
        ("mysql", "Doc Order-Id", "`Doc Order-Id`"),
    ],
)
def test_a_nextval_default_of_the_pooled_sequence_itself_is_no_collision(
    engines: Any, name: str, sequence: str, seq_sql: str
) -> None:
    metadata, orders = _pooled_orders(sequence)
    with fresh_engine(engines, name) as (engine, _):
        metadata.create_all(engine)
        with engine.begin() as conn:
            conn.exec_driver_sql(_SET_DEFAULT[name].format(seq=seq_sql))
            conn.execute(sa.insert(orders).values(src="app"))
            conn.exec_driver_sql("INSERT INTO doc_orders (src) VALUES ('raw')")
        report = doctor(engine, metadata)
    assert _statuses(report, "schema", "doc_orders.id") == ["ok"], report.format()
    assert report.healthy, report.format()


@pytest.mark.parametrize("name", ["postgresql", "mysql"])
def test_a_nextval_default_of_another_sequence_is_still_a_collision(
    engines: Any, name: str
) -> None:
    metadata, _ = _pooled_orders("doc_order_id")
    with fresh_engine(engines, name) as (engine, _):
        metadata.create_all(engine)
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE SEQUENCE doc_order_id_2")
            conn.exec_driver_sql(_SET_DEFAULT[name].format(seq="doc_order_id_2"))
        report = doctor(engine, metadata)
    assert ("schema", "doc_orders.id") in problems(report), report.format()


def test_a_nextval_of_the_same_name_in_another_schema_is_a_collision(engines: Any) -> None:
    metadata, _ = _pooled_orders("doc_order_id")
    with fresh_engine(engines, "postgresql") as (engine, _):
        metadata.create_all(engine)
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE SCHEMA doc_other")
            conn.exec_driver_sql("CREATE SEQUENCE doc_other.doc_order_id")
            conn.exec_driver_sql(_SET_DEFAULT["postgresql"].format(seq="doc_other.doc_order_id"))
        report = doctor(engine, metadata)
    assert ("schema", "doc_orders.id") in problems(report), report.format()


# -- 3. a table locked by another transaction ------------------------------------------

_LOCK = {
    "postgresql": "LOCK TABLE doc_invoices IN ACCESS EXCLUSIVE MODE",
    "mysql": "LOCK TABLES doc_invoices WRITE",
}
#: doctor waits at most a few seconds per locked statement
_BOUND_S = 40


def _invoices() -> tuple[sa.MetaData, sa.Table]:
    metadata = sa.MetaData()
    sequences_table(metadata)
    inv = TableSequence("doc_inv", mode="batch")
    invoices = sa.Table(
        "doc_invoices", metadata, sa.Column("id", sa.BigInteger, primary_key=True, default=inv)
    )
    return metadata, invoices


def _create_with_keys(engine: Engine, metadata: sa.MetaData, invoices: sa.Table) -> None:
    """The tables and the sequence doc_inv, which is behind doc_invoices' keys 1 to 10."""
    metadata.create_all(engine)
    create_table_sequence(engine, "doc_inv")
    with engine.begin() as conn:
        conn.execute(sa.insert(invoices), [{"id": i} for i in range(1, 11)])


@contextmanager
def _locked(engine: Engine, name: str) -> Iterator[None]:
    """doc_invoices locked by another connection's open transaction."""
    holder = engine.connect()
    transaction = holder.begin()
    holder.exec_driver_sql(_LOCK[name])
    try:
        yield
    finally:
        if name == "mysql":
            holder.exec_driver_sql("UNLOCK TABLES")
        transaction.rollback()
        holder.close()


def _lock_settings(conn: sa.Connection, name: str) -> tuple[Any, ...]:
    if name == "postgresql":
        return (conn.exec_driver_sql("SHOW lock_timeout").scalar(),)
    query = "SELECT @@SESSION.lock_wait_timeout, @@SESSION.innodb_lock_wait_timeout"
    return tuple(conn.exec_driver_sql(query).one())


def _doctor_with_deadline(bind: Any, metadata: sa.MetaData) -> Any:
    """doctor(bind, metadata), failing the test if it has not returned in _BOUND_S."""
    result: list[Any] = []
    worker = threading.Thread(target=lambda: result.append(doctor(bind, metadata)), daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(_BOUND_S)
    assert not worker.is_alive(), f"doctor still waiting after {_BOUND_S} s on a locked table"
    assert result, "doctor raised"
    assert time.monotonic() - started < _BOUND_S
    return result[0]


def _assert_locked_reported(report: Any) -> None:
    (found,) = [
        f for f in report.findings if f.subject == "doc_invoices.id" and "lock" in f.message
    ]
    assert found.status == "problem", report.format()
    assert "locked by another transaction" in found.message, found.message


@pytest.mark.parametrize("name", ["postgresql", "mysql"])
def test_a_locked_table_is_reported_not_waited_on(engines: Any, name: str) -> None:
    metadata, invoices = _invoices()
    with fresh_engine(engines, name) as (engine, _):
        _create_with_keys(engine, metadata, invoices)
        with _locked(engine, name):
            report = _doctor_with_deadline(engine, metadata)
        _assert_locked_reported(report)


@pytest.mark.parametrize("name", ["postgresql", "mysql"])
@pytest.mark.parametrize("in_transaction", [True, False])
def test_doctor_in_the_callers_connection_leaves_its_lock_settings(
    engines: Any, name: str, in_transaction: bool
) -> None:
    metadata, _ = _invoices()
    # the caller's own work, on a table doctor does not read (nor the lock holder lock)
    work = sa.Table("doc_work", metadata, sa.Column("id", sa.Integer, primary_key=True))
    with fresh_engine(engines, name) as (engine, _):
        metadata.create_all(engine)
        create_table_sequence(engine, "doc_inv")
        with engine.connect() as conn:
            if name == "postgresql":
                conn.exec_driver_sql("SET lock_timeout = '47s'")
            else:
                conn.exec_driver_sql("SET SESSION lock_wait_timeout = 4700")
                conn.exec_driver_sql("SET SESSION innodb_lock_wait_timeout = 470")
            conn.commit()
            before = _lock_settings(conn, name)
            conn.commit()
            if in_transaction:
                conn.begin()
                conn.execute(sa.insert(work), [{"id": 1}])
            with _locked(engine, name):
                report = _doctor_with_deadline(conn, metadata)
            assert conn.in_transaction() is in_transaction
            assert _lock_settings(conn, name) == before
            if in_transaction:  # the caller's work is still there, uncommitted
                assert conn.scalar(sa.select(sa.func.count()).select_from(work)) == 1
                conn.rollback()
        _assert_locked_reported(report)


@pytest.mark.parametrize("name", ["postgresql", "mysql"])
def test_doctor_on_an_autocommit_connection_bounds_its_waits_and_checks(
    engines: Any, name: str
) -> None:
    # AUTOCOMMIT: SQLAlchemy's begin is bookkeeping only, so a savepoint (PostgreSQL:
    # "SAVEPOINT can only be used in transaction blocks") or a SET LOCAL (no effect:
    # unbounded waits) would fail; doctor runs its checks unwrapped and sets the session
    metadata, invoices = _invoices()
    with fresh_engine(engines, name) as (engine, _):
        _create_with_keys(engine, metadata, invoices)
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            before = _lock_settings(conn, name)  # and SQLAlchemy's begin, implicit
            report = doctor(conn, metadata)
            (behind,) = [f for f in report.findings if f.check == "behind"]
            assert behind.status == "problem", report.format()  # next 1, the table holds 10
            assert behind.details["max_key"] == 10
            assert not [f for f in report.findings if "could not check" in f.message]
            with _locked(engine, name):
                locked = _doctor_with_deadline(conn, metadata)
            assert _lock_settings(conn, name) == before
        _assert_locked_reported(locked)


# -- 4. PostgreSQL: a name over 63 bytes, which the server cuts --------------------------


def test_a_postgresql_name_cut_to_63_bytes_is_found(engines: Any) -> None:
    metadata = sa.MetaData()
    sequences_table(metadata)
    inv = TableSequence("doc_inv", mode="batch")
    table = sa.Table(
        "ö" * 40, metadata, sa.Column("ü" * 40, sa.BigInteger, primary_key=True, default=inv)
    )
    with fresh_engine(engines, "postgresql") as (engine, _):
        metadata.create_all(engine)
        create_table_sequence(engine, "doc_inv")
        with engine.begin() as conn:
            conn.execute(sa.insert(table), [{"ü" * 40: 500}])
        report = doctor(engine, metadata)
    subject = f"{'ö' * 40}.{'ü' * 40}"
    assert _statuses(report, "schema", subject) == ["ok"], report.format()
    (behind,) = [f for f in report.findings if (f.check, f.subject) == ("behind", subject)]
    assert behind.status == "problem", report.format()  # next 1, the table holds 500
    assert behind.details["max_key"] == 500


# -- 5. TypeID keys ---------------------------------------------------------------------

_TYPEID_MODELS = """
import sqlalchemy as sa
from sqlalchemy_seqkeys import TypeIDType, typeid_default

metadata = sa.MetaData()
sa.Table(
    "doc_users", metadata,
    sa.Column("id", TypeIDType("user"), primary_key=True, default=typeid_default("user")),
)
"""


@pytest.mark.parametrize("name", ["sqlite", "postgresql", "mysql"])
def test_typeid_keys_are_checked(
    engines: Any,
    name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    metadata = sa.MetaData()
    sa.Table(
        "doc_users",
        metadata,
        sa.Column("id", TypeIDType("user"), primary_key=True, default=typeid_default("user")),
    )
    models = write_models(tmp_path, monkeypatch, _TYPEID_MODELS)
    with fresh_engine(engines, name) as (engine, url):
        metadata.create_all(engine)
        report = doctor(engine, metadata)
        assert report.database["key_columns"] == ["doc_users.id"]
        assert _statuses(report, "order", "doc_users.id") == ["ok"], report.format()
        assert report.healthy, report.format()
        capsys.readouterr()
        assert main(["doctor", "--url", url, "--models", models]) == 0
    assert "typeid_default('user')" in capsys.readouterr().out


# -- 6. a password given as a URL query argument ----------------------------------------

_PW_MODELS = """
import sqlalchemy as sa
from sqlalchemy_seqkeys import TableSequence, sequences_table

metadata = sa.MetaData()
sequences_table(metadata)
inv = TableSequence("doc_inv", mode="batch")
sa.Table("doc_invoices", metadata, sa.Column("id", sa.BigInteger, primary_key=True, default=inv))
"""


@pytest.mark.parametrize("query_key", ["password", "sslpassword"])
def test_a_password_in_the_query_is_never_printed(
    engines: Any,
    query_key: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    metadata, invoices = _invoices()
    models = write_models(tmp_path, monkeypatch, _PW_MODELS)
    with fresh_engine(engines, "postgresql") as (engine, url):
        metadata.create_all(engine)
        create_table_sequence(engine, "doc_inv")
        with engine.begin() as conn:  # the sequence is behind: the fix is a resync command
            conn.execute(sa.insert(invoices), [{"id": 5000}])
        secret_url = f"{url}?{query_key}=S3CRET"  # trust: any password is accepted
        secret_engine = sa.create_engine(secret_url)
        try:
            report = doctor(secret_engine, metadata)
        finally:
            secret_engine.dispose()
        capsys.readouterr()
        assert main(["doctor", "--url", secret_url, "--models", models]) == 1
        table = capsys.readouterr()
        assert main(["doctor", "--url", secret_url, "--models", models, "--json"]) == 1
        as_json = capsys.readouterr()
    for shown in (report.format(), report.to_json(), table.out, table.err, as_json.out):
        assert "S3CRET" not in shown, shown
    (fix,) = [f.fix for f in report.problems if f.check == "behind"]
    assert fix is not None
    assert '--url "$DATABASE_URL"' in fix, fix
    assert '"$DATABASE_URL"' in table.out
