"""seqkeys doctor never calls a key column healthy when the next insert collides.

Each test plants what an earlier doctor passed: a MariaDB key column whose
DEFAULT is NEXTVAL(seq), a tenant (schema_translate_map) whose sequence is
behind its own rows, a MAX(key) that is no integer, a reflected key type doctor
does not know (a DOMAIN over INTEGER, oid, money, YEAR...), a server-minted key
column whose real default is not the model's function, --models with no key
column, and a pooled sequence in another schema whose printed fix must name it.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import (
    CombGuid,
    PooledSequence,
    TableSequence,
    create_table_sequence,
    doctor,
    new_comb_guid,
    resync_pooled_sequence,
    sequences_table,
    server_uuid,
    server_uuid7,
)
from sqlalchemy_seqkeys.cli import main
from tests._helpers import tenant_schemas
from tests.backend.test_doctor import _run_fix, fresh_engine, problems, write_models

pytestmark = pytest.mark.backend


def _invoices(metadata: sa.MetaData | None = None) -> tuple[sa.MetaData, sa.Table]:
    """A BigInteger key of TableSequence ``doc_inv``, and the sequences table."""
    metadata = metadata or sa.MetaData()
    sequences_table(metadata)
    inv = TableSequence("doc_inv", mode="batch")
    invoices = sa.Table(
        "doc_invoices", metadata, sa.Column("id", sa.BigInteger, primary_key=True, default=inv)
    )
    return metadata, invoices


def _statuses(report: Any, check: str, subject: str) -> list[str]:
    return [f.status for f in report.findings if (f.check, f.subject) == (check, subject)]


# -- 1. MariaDB: DEFAULT NEXTVAL(seq), which SQLAlchemy's reflection drops --------------


def test_a_mariadb_nextval_default_is_a_problem(engines: Any) -> None:
    metadata, invoices = _invoices()
    with fresh_engine(engines, "mysql") as (engine, _):
        metadata.create_all(engine)
        create_table_sequence(engine, "doc_inv")
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE SEQUENCE doc_legacy_seq")
            conn.exec_driver_sql(
                "ALTER TABLE doc_invoices MODIFY id BIGINT NOT NULL DEFAULT NEXTVAL(doc_legacy_seq)"
            )
        report = doctor(engine, metadata)
        assert ("schema", "doc_invoices.id") in problems(report), report.format()
        (found,) = [f for f in report.problems if f.subject == "doc_invoices.id"]
        assert "nextval(" in found.message.lower(), found.message
        assert found.fix is not None
        assert "server_default=None" in found.fix, found.fix
        _run_fix(engine, found.fix)
        after = doctor(engine, metadata)
        assert _statuses(after, "schema", "doc_invoices.id") == ["ok"], after.format()
        with engine.begin() as conn:
            conn.execute(sa.insert(invoices))


# -- 2. a tenant's connection (schema_translate_map) -----------------------------------


def test_a_tenants_sequence_is_judged_by_the_tenants_rows(engines: Any) -> None:
    metadata, invoices = _invoices()
    sa.Table(
        "doc_events",
        metadata,
        sa.Column("id", CombGuid(), primary_key=True, default=new_comb_guid),
    )
    with (
        fresh_engine(engines, "postgresql") as (engine, _),
        tenant_schemas(engine, "doc_tenant_b") as (tenant,),
    ):
        metadata.create_all(engine)
        metadata.create_all(tenant)
        create_table_sequence(engine, "doc_inv")
        create_table_sequence(tenant, "doc_inv")
        with engine.begin() as conn:  # the default schema: 5 rows, its sequence past them
            conn.execute(sa.insert(invoices), [{"id": i} for i in range(1, 6)])
            conn.exec_driver_sql("UPDATE sequences SET next_value = 6")
        with tenant.begin() as conn:  # the tenant: rows up to 500, its sequence at 10
            conn.execute(sa.insert(invoices), [{"id": i} for i in range(1, 501)])
            conn.exec_driver_sql("UPDATE doc_tenant_b.sequences SET next_value = 10")
        with tenant.connect() as conn:
            report = doctor(conn, metadata)
        assert not report.healthy, report.format()
        (behind,) = [f for f in report.findings if f.check == "behind"]
        assert behind.status == "problem", behind
        assert behind.details == {"next_value": 10, "max_key": 500}, behind
        # the order check's temporary table is no tenant's table
        assert _statuses(report, "order", "doc_events.id") == ["ok"], report.format()
        assert _statuses(report, "schema", "doc_invoices.id") == ["ok"], report.format()
        # a tenant whose table is missing: the tenant's schema is reflected
        with engine.begin() as conn:
            conn.exec_driver_sql("DROP TABLE doc_tenant_b.doc_invoices")
        missing = doctor(tenant, metadata)
        assert ("schema", "doc_invoices.id") in problems(missing), missing.format()
        # and the default schema, whose sequence is past its rows, is healthy
        assert doctor(engine, metadata).healthy


# -- 3. MAX(key) that is no integer ------------------------------------------------------


@pytest.mark.parametrize("planted", ["'abc'", "'1_0'"])
def test_a_max_that_is_no_integer_is_a_problem(engines: Any, planted: str) -> None:
    """SQLite keeps text in a BIGINT column, and sorts it after every number."""
    metadata, _ = _invoices()
    with fresh_engine(engines, "sqlite") as (engine, _url):
        metadata.create_all(engine)
        create_table_sequence(engine, "doc_inv")
        with engine.begin() as conn:
            conn.exec_driver_sql("INSERT INTO doc_invoices (id) VALUES (1000)")
            conn.exec_driver_sql(f"INSERT INTO doc_invoices (id) VALUES ({planted})")
            conn.exec_driver_sql("UPDATE sequences SET next_value = 11")
        report = doctor(engine, metadata)
    assert not report.healthy, report.format()
    (behind,) = [f for f in report.findings if f.check == "behind"]
    assert behind.status == "problem", behind
    assert planted in behind.message, behind.message
    assert "not an integer" in behind.message, behind.message


# -- 4. reflected key types doctor does not know ----------------------------------------


@pytest.mark.parametrize(
    ("name", "ddl", "healthy"),
    [
        ("postgresql", "CREATE DOMAIN doc_keyint AS integer", False),
        ("postgresql", "CREATE DOMAIN doc_keyint AS bigint", True),
        ("postgresql", "CREATE DOMAIN doc_keyint AS numeric(10, 0)", False),
        ("postgresql", "oid", False),
        ("postgresql", "interval", False),
        ("postgresql", "int4range", False),
        ("postgresql", "money", False),
        ("mysql", "YEAR(4)", False),
    ],
)
def test_a_key_type_doctor_cannot_judge_is_a_problem(
    engines: Any, name: str, ddl: str, healthy: bool
) -> None:
    metadata, _ = _invoices()
    with fresh_engine(engines, name) as (engine, _url):
        metadata.tables["sequences"].create(engine)
        create_table_sequence(engine, "doc_inv")
        column_type = ddl
        with engine.begin() as conn:
            if ddl.startswith("CREATE DOMAIN"):
                conn.exec_driver_sql(ddl)
                column_type = "doc_keyint"
            conn.exec_driver_sql(
                f"CREATE TABLE doc_invoices (id {column_type} NOT NULL PRIMARY KEY)"
            )
        with warnings.catch_warnings():  # "Did not recognize type": what is checked here
            warnings.simplefilter("ignore", sa.exc.SAWarning)
            report = doctor(engine, metadata)
    statuses = _statuses(report, "schema", "doc_invoices.id")
    if healthy:
        assert statuses == ["ok"], report.format()
    else:
        assert statuses == ["problem"], report.format()


# -- 5. the real column's server default ----------------------------------------------


@pytest.mark.parametrize(
    ("name", "function", "ddl"),
    [
        ("postgresql18", server_uuid7, "uuid NOT NULL DEFAULT gen_random_uuid()"),
        ("postgresql18", server_uuid7, "uuid NOT NULL"),
        ("mysql", server_uuid, "UUID NOT NULL"),
    ],
)
def test_a_server_key_column_without_the_models_default_is_a_problem(
    engines: Any, name: str, function: Any, ddl: str
) -> None:
    metadata = sa.MetaData()
    sa.Table(
        "doc_server",
        metadata,
        sa.Column("id", CombGuid(native_uuid=True), primary_key=True, server_default=function()),
    )
    with fresh_engine(engines, name) as (engine, _):
        with engine.begin() as conn:
            conn.exec_driver_sql(f"CREATE TABLE doc_server (id {ddl} PRIMARY KEY)")
        report = doctor(engine, metadata)
        (order,) = [f for f in report.findings if f.check == "order"]
        assert order.status == "problem", report.format()
        assert "default" in order.message, order.message
        assert order.fix is not None
        assert "server_default=" in order.fix, order.fix
        _run_fix(engine, order.fix)
        after = doctor(engine, metadata)
        assert after.healthy, after.format()


# -- 6. no key column in --models --------------------------------------------------------


def test_models_without_a_key_column_are_refused(
    engines: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = "import sqlalchemy as sa\nmetadata = sa.MetaData()\n"
    models = write_models(tmp_path, monkeypatch, source)
    with fresh_engine(engines, "sqlite") as (engine, url):
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE doc_x (id INTEGER PRIMARY KEY)")
        report = doctor(engine, sa.MetaData())
        assert not report.healthy, report.format()
        assert "no key column" in report.problems[0].message, report.format()
        capsys.readouterr()
        assert main(["doctor", "--url", url, "--models", models]) == 2
        err = capsys.readouterr().err
    assert "no key column" in err, err
    assert "import" in err, err  # what to check: the module that declares the models


# -- 7. a pooled sequence in another schema: the fix names the schemas ------------------


def test_the_pooled_fix_names_the_schemas(engines: Any) -> None:
    metadata = sa.MetaData()
    order_id = PooledSequence("doc_order_id", batch_size=50, schema="doc_sales", metadata=metadata)
    orders = sa.Table(
        "doc_orders",
        metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, default=order_id),
        schema="doc_sales",
    )
    public = sa.MetaData()  # the same names in the default schema
    PooledSequence("doc_order_id", batch_size=50, metadata=public)
    sa.Table("doc_orders", public, sa.Column("id", sa.BigInteger, primary_key=True))
    with fresh_engine(engines, "postgresql") as (engine, _), tenant_schemas(engine, "doc_sales"):
        metadata.create_all(engine)
        public.create_all(engine)
        with engine.begin() as conn:
            conn.execute(sa.insert(orders), [{"id": i} for i in range(1, 1001)])
        (found,) = [f for f in doctor(engine, metadata).problems if f.check == "behind"]
        assert found.fix is not None
        assert "schema='doc_sales'" in found.fix, found.fix
        assert "sequence_schema='doc_sales'" in found.fix, found.fix
        call = found.fix.split(" (Python")[0]
        eval(call, {"resync_pooled_sequence": resync_pooled_sequence, "engine": engine})
        assert doctor(engine, metadata).healthy
        with engine.begin() as conn:
            order_id.drop(conn)
        (missing,) = doctor(engine, metadata).problems
        assert "schema='doc_sales'" in (missing.fix or ""), missing.fix


def test_a_mariadb_tenants_database_is_the_one_checked(engines: Any) -> None:
    """A tenant that is a MariaDB database: its rows, and its key column's NEXTVAL default."""
    metadata, invoices = _invoices()
    with (
        fresh_engine(engines, "mysql") as (engine, _),
        engines.fresh_database("mysql", "doctor_tenant") as tenant_url,
    ):
        tenant_db = str(sa.make_url(tenant_url).database)
        tenant = engine.execution_options(schema_translate_map={None: tenant_db})
        metadata.create_all(engine)
        metadata.create_all(tenant)
        create_table_sequence(engine, "doc_inv")
        create_table_sequence(tenant, "doc_inv")
        with tenant.begin() as conn:
            conn.execute(sa.insert(invoices), [{"id": i} for i in range(1, 501)])
            conn.exec_driver_sql(f"UPDATE `{tenant_db}`.sequences SET next_value = 10")
        report = doctor(tenant, metadata)
        (behind,) = [f for f in report.findings if f.check == "behind"]
        assert behind.details == {"next_value": 10, "max_key": 500}, behind
        assert behind.status == "problem", behind
        assert doctor(engine, metadata).healthy
        with tenant.begin() as conn:
            conn.exec_driver_sql(f"UPDATE `{tenant_db}`.sequences SET next_value = 501")
            conn.exec_driver_sql(f"CREATE SEQUENCE `{tenant_db}`.doc_legacy_seq")
            conn.exec_driver_sql(
                f"ALTER TABLE `{tenant_db}`.doc_invoices "
                f"MODIFY id BIGINT NOT NULL DEFAULT NEXTVAL(`{tenant_db}`.doc_legacy_seq)"
            )
        assert problems(doctor(tenant, metadata)) == [("schema", "doc_invoices.id")]
        assert doctor(engine, metadata).healthy
