"""seqkeys doctor on every engine: healthy databases pass, each planted problem is found.

Each test works in a fresh database of its own. The planted problems: COMB keys
in a column type that does not sort them (MariaDB's UUID; a COMB layout the
engine does not sort by elsewhere), a table sequence behind its table's rows, a
pooled native sequence whose INCREMENT BY is not the allocation size (a pooled
sequence behind its rows where the engine has no native sequences), and a
worker-lease table of version 0.1 (no high_water_ms). The CLI exits 1 on each,
0 on the healthy database; doctor writes nothing (the row counts and sequence
values are the same after it).
"""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    CombGuid,
    DoctorReport,
    PooledSequence,
    SeqKeysError,
    TableSequence,
    create_table_sequence,
    doctor,
    doctor_async,
    new_comb_guid,
    new_uuid7,
    sequences_table,
    workers_table,
)
from sqlalchemy_seqkeys._dialect import incrementing_sequences
from sqlalchemy_seqkeys.cli import main
from tests.conftest import ASYNC_DRIVERS, ENGINE_NAMES

pytestmark = pytest.mark.backend

ROWS = 5


@dataclass
class Models:
    metadata: sa.MetaData
    orders: sa.Table  # TableSequence
    items: sa.Table  # PooledSequence
    events: sa.Table  # new_comb_guid
    notes: sa.Table  # new_uuid7
    invoice_no: TableSequence
    item_id: Any


def make_models(metadata: sa.MetaData | None = None) -> Models:
    metadata = metadata or sa.MetaData()
    invoice_no = TableSequence("doc_invoice_no", mode="batch", batch_size=10)
    item_id = PooledSequence("doc_item_id", batch_size=10)
    big = sa.BigInteger()
    orders = sa.Table(
        "doc_orders", metadata, sa.Column("id", big, primary_key=True, default=invoice_no)
    )
    items = sa.Table("doc_items", metadata, sa.Column("id", big, primary_key=True, default=item_id))
    events = sa.Table(
        "doc_events", metadata, sa.Column("id", CombGuid(), primary_key=True, default=new_comb_guid)
    )
    notes = sa.Table(
        "doc_notes", metadata, sa.Column("id", CombGuid(), primary_key=True, default=new_uuid7)
    )
    workers_table(metadata, "doc_workers")
    sequences_table(metadata)
    return Models(metadata, orders, items, events, notes, invoice_no, item_id)


def create(engine: Engine, models: Models) -> None:
    models.metadata.create_all(engine)
    models.invoice_no.create(engine, checkfirst=True)
    models.item_id.create(engine, checkfirst=True)
    with engine.begin() as conn:
        for table in (models.orders, models.items, models.events, models.notes):
            for _ in range(ROWS):
                conn.execute(sa.insert(table))


@contextmanager
def fresh_engine(engines: Any, name: str) -> Iterator[tuple[Engine, str]]:
    """A new, empty database on engine ``name``: (engine, url); disposed and dropped after."""
    with engines.fresh_database(name, "doctor") as url:
        engine = sa.create_engine(url)
        if name == "spanner":
            from tests._emulator import configure_engine

            configure_engine(engine)
        try:
            yield engine, url
        finally:
            engine.dispose()


@pytest.fixture(params=ENGINE_NAMES)
def fresh(request: pytest.FixtureRequest, engines: Any) -> Iterator[tuple[Engine, str]]:
    """A new, empty database on each engine: (engine, url)."""
    with fresh_engine(engines, request.param) as made:
        yield made


def write_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> str:
    """A models module for --models (the test's own, on sys.path); returns module:attr."""
    module = f"doctor_models_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    return f"{module}:metadata"


MODELS_SOURCE = """
import sqlalchemy as sa
from tests.backend.test_doctor import make_models

metadata = make_models().metadata
"""


def cli(url: str, models: str, *extra: str) -> int:
    return main(["doctor", "--url", url, "--models", models, *extra])


def problems(report: DoctorReport) -> list[tuple[str, str]]:
    return [(f.check, f.subject) for f in report.problems]


def counts(engine: Engine, models: Models) -> list[int | None]:
    with engine.connect() as conn:
        return [
            conn.scalar(sa.select(sa.func.count()).select_from(t))
            for t in (models.orders, models.items, models.events, models.notes)
        ]


def test_healthy_database(
    fresh: tuple[Engine, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    engine, url = fresh
    models = make_models()
    create(engine, models)
    report = doctor(engine, models.metadata)
    assert report.healthy, report.format()
    checks = {(f.check, f.subject): f.status for f in report.findings}
    ordered = engine.dialect.name != "spanner+spanner"
    assert checks[("order", "doc_events.id")] == ("ok" if ordered else "skipped")
    assert checks[("order", "doc_notes.id")] == ("ok" if ordered else "skipped")
    assert checks[("behind", "doc_orders.id")] == "ok"
    assert checks[("behind", "doc_items.id")] == "ok"
    assert checks[("schema", "table doc_workers")] == "ok"
    assert ("clock", "server") in checks
    before = counts(engine, models)

    models_arg = write_models(tmp_path, monkeypatch, MODELS_SOURCE)
    capsys.readouterr()
    assert cli(url, models_arg) == 0
    out = capsys.readouterr().out
    assert "healthy: no problem found" in out
    assert cli(url, models_arg, "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["healthy"] is True
    assert {f["check"] for f in data["findings"]} >= {"behind", "schema", "clock", "capabilities"}
    capabilities = {
        key: value
        for f in data["findings"]
        if f["check"] == "capabilities"
        for key, value in f["details"].items()
    }
    # the keys are the library's names: server_uuid7() and server_uuid() (docs/doctor.md)
    assert {"returning", "server_uuid7", "server_uuid"} <= capabilities.keys(), capabilities
    assert capabilities["returning"] is bool(engine.dialect.insert_returning)
    assert counts(engine, models) == before  # doctor wrote nothing
    with engine.connect() as conn:  # and dropped its temporary table
        tables = sa.inspect(conn).get_table_names()
        assert not [t for t in tables if t.startswith("seqkeys_doctor_order")], tables


def test_table_sequence_behind_its_rows(
    fresh: tuple[Engine, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    engine, url = fresh
    models = make_models()
    create(engine, models)
    with engine.begin() as conn:  # an import with its own keys
        conn.execute(sa.insert(models.orders).values(id=10_000))
    report = doctor(engine, models.metadata)
    assert problems(report) == [("behind", "doc_orders.id")]
    (finding,) = report.problems
    assert finding.details["max_key"] == 10_000
    assert finding.fix is not None
    assert finding.fix.startswith("seqkeys resync --url ")
    assert "--sequence doc_invoice_no --table doc_orders --column id" in finding.fix
    models_arg = write_models(tmp_path, monkeypatch, MODELS_SOURCE)
    assert cli(url, models_arg) == 1
    assert "1 problem found" in capsys.readouterr().out

    # the printed fix fixes it (doctor itself never moves a sequence)
    argv = shlex.split(finding.fix.replace(shlex.quote(url_hidden(engine)), shlex.quote(url)))
    assert main(argv[1:]) == 0
    assert doctor(engine, models.metadata).healthy


def url_hidden(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=True)


def test_pooled_sequence_with_the_wrong_increment(
    fresh: tuple[Engine, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, url = fresh
    models = make_models()
    create(engine, models)
    models_arg = write_models(tmp_path, monkeypatch, MODELS_SOURCE)
    if incrementing_sequences(engine.dialect):
        with engine.begin() as conn:  # made by hand, INCREMENT BY 1
            conn.execute(sa.schema.DropSequence(models.item_id.sequence))
            conn.execute(sa.schema.CreateSequence(sa.Sequence("doc_item_id", start=1000)))
        report = doctor(engine, models.metadata)
        assert problems(report) == [("behind", "sequence doc_item_id")]
        assert report.problems[0].details == {"increment": 1, "allocation_size": 10}
        fix = report.problems[0].fix or ""
        assert "INCREMENT BY 10" in fix
        assert cli(url, models_arg) == 1
        with engine.begin() as conn:  # the printed fix (doctor never alters a sequence)
            conn.exec_driver_sql(fix.partition(" (or declare")[0])
        assert doctor(engine, models.metadata).healthy
    else:  # no native sequences here: the pooled sequence's row, behind its table's keys
        with engine.begin() as conn:
            conn.execute(sa.insert(models.items).values(id=5_000))
        report = doctor(engine, models.metadata)
        assert problems(report) == [("behind", "doc_items.id")]
        assert cli(url, models_arg) == 1


def test_pooled_native_sequence_behind_its_rows(pg_or_mariadb: tuple[Engine, str]) -> None:
    engine, _ = pg_or_mariadb
    models = make_models()
    create(engine, models)
    with engine.begin() as conn:
        conn.execute(sa.insert(models.items).values(id=50_000))
    report = doctor(engine, models.metadata)
    assert problems(report) == [("behind", "doc_items.id")]
    assert "resync_pooled_sequence(engine, 'doc_item_id', 'doc_items', 'id')" in (
        report.problems[0].fix or ""
    )


@pytest.fixture(params=["postgresql", "postgresql18", "mysql"])
def pg_or_mariadb(request: pytest.FixtureRequest, engines: Any) -> Iterator[tuple[Engine, str]]:
    with fresh_engine(engines, request.param) as made:
        yield made


def test_stale_lease_table(
    fresh: tuple[Engine, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, url = fresh
    models = make_models()
    stale = sa.MetaData()
    sa.Table(  # version 0.1's lease table: no high_water_ms
        "doc_workers",
        stale,
        sa.Column("worker_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("owner", sa.String(64), nullable=False),
        sa.Column("expires_at", sa.BigInteger, nullable=False),
    )
    stale.create_all(engine)
    create(engine, models)  # the other tables (create_all leaves doc_workers as it is)
    report = doctor(engine, models.metadata)
    assert problems(report) == [("schema", "table doc_workers")]
    assert report.problems[0].fix == "in a migration: op.upgrade_worker_lease_table('doc_workers')"
    assert cli(url, write_models(tmp_path, monkeypatch, MODELS_SOURCE)) == 1


COMB_AT_END_SOURCE = """
import sqlalchemy as sa
from sqlalchemy_seqkeys import CombGuid, new_comb_guid
from tests.backend.test_doctor import make_models

metadata = make_models().metadata
sa.Table(
    "doc_misordered", metadata,
    sa.Column("id", CombGuid(), primary_key=True, default=new_comb_guid.with_layout("at_end")),
)
"""


def test_comb_keys_the_column_does_not_sort(
    fresh: tuple[Engine, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MariaDB: COMB keys in its native UUID type; elsewhere a layout the engine does not sort."""
    engine, url = fresh
    if engine.dialect.name == "spanner+spanner":
        pytest.skip("Spanner: no order is promised, so none is checked (see the healthy test)")
    models = make_models()
    create(engine, models)
    if getattr(engine.dialect, "is_mariadb", False):
        with engine.begin() as conn:  # a migration made by hand: the key column became UUID
            conn.exec_driver_sql("ALTER TABLE doc_events MODIFY id UUID NOT NULL")
        models_arg = write_models(tmp_path, monkeypatch, MODELS_SOURCE)
        subject = "doc_events.id"
        metadata = models.metadata
    else:
        models_arg = write_models(tmp_path, monkeypatch, COMB_AT_END_SOURCE)
        module = __import__(models_arg.partition(":")[0])
        metadata = module.metadata
        metadata.tables["doc_misordered"].create(engine)
        subject = "doc_misordered.id"
    report = doctor(engine, metadata)
    assert problems(report) == [("order", subject)]
    finding = report.problems[0]
    assert finding.details["out_of_order"] > 100  # of 1,000
    assert cli(url, models_arg) == 1


@pytest.mark.parametrize("label", list(ASYNC_DRIVERS))
def test_async_twin(label: str, engines: Any) -> None:
    sync_name, drivername, module = ASYNC_DRIVERS[label]
    pytest.importorskip(module)
    models = make_models()
    with engines.fresh_database(sync_name, "doctor_async") as url:
        sync = sa.create_engine(url)
        try:
            create(sync, models)
        finally:
            sync.dispose()

        async def main_() -> DoctorReport:
            from sqlalchemy.ext.asyncio import create_async_engine

            engine = create_async_engine(sa.make_url(url).set(drivername=drivername))
            try:
                return await doctor_async(engine, models.metadata)
            finally:
                await engine.dispose()

        report = asyncio.run(main_())
    assert report.healthy, report.format()
    assert {f.check for f in report.findings} >= {"order", "behind", "schema", "clock"}


def test_the_cli_refuses_what_it_cannot_load(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--url", "sqlite://", "--models", "no_such_module_x:metadata"]) == 2
    assert "cannot load --models" in capsys.readouterr().err
    assert main(["doctor", "--url", "sqlite://", "--models", f"{__name__}:ROWS"]) == 2
    assert "MetaData or a declarative base" in capsys.readouterr().err
    assert sys.modules[__name__].ROWS == ROWS


@pytest.mark.parametrize("name", ["postgresql18", "mysql"])
def test_server_minted_keys_are_checked_in_order(name: str, engines: Any) -> None:
    from sqlalchemy_seqkeys import server_uuid

    metadata = sa.MetaData()
    sa.Table(
        "doc_server",
        metadata,
        sa.Column("id", CombGuid(native_uuid=True), primary_key=True, server_default=server_uuid()),
    )
    with fresh_engine(engines, name) as (engine, _):
        metadata.create_all(engine)
        report = doctor(engine, metadata)
    assert report.healthy, report.format()
    (order,) = [f for f in report.findings if f.check == "order"]
    assert order.status == "ok"
    assert order.message.startswith("1000 keys of server_uuid() sort in minting order")


def test_a_snowflake_lease_sets_the_clock_limit(engines: Any) -> None:
    from sqlalchemy_seqkeys import Snowflake, WorkerLease

    with engines.fresh_database("sqlite", "doctor") as url:
        engine = sa.create_engine(url)
        try:
            with WorkerLease(engine, ttl=30, max_skew=1.5) as lease:
                metadata = sa.MetaData()
                sa.Table(
                    "doc_snow",
                    metadata,
                    sa.Column("id", sa.BigInteger, primary_key=True, default=Snowflake(lease)),
                )
                metadata.create_all(engine)
                report = doctor(engine, metadata)
        finally:
            engine.dispose()
    assert report.healthy, report.format()
    found = {(f.check, f.subject): f for f in report.findings}
    assert found[("schema", "table seqkeys_workers")].status == "ok"
    clock = found[("clock", "server")]
    assert clock.status == "ok"
    assert clock.details["max_skew_s"] == 1.5


def test_a_bit_reversed_keys_counter_must_exist(fresh: tuple[Engine, str]) -> None:
    from sqlalchemy_seqkeys import BitReversedSequence

    engine, _ = fresh
    models = make_models()
    account_id = BitReversedSequence("doc_account_id", metadata=models.metadata)
    sa.Table(
        "doc_accounts",
        models.metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, default=account_id),
    )
    create(engine, models)  # create_all creates the counter too (metadata=)
    found = {(f.check, f.subject): f.status for f in doctor(engine, models.metadata).findings}
    assert found[("schema", "sequence doc_account_id")] == "ok"
    with engine.begin() as conn:
        account_id.drop(conn)
    report = doctor(engine, models.metadata)
    assert problems(report) == [("schema", "sequence doc_account_id")]
    assert (
        report.problems[0].fix
        == "in a migration: op.create_bit_reversed_sequence('doc_account_id')"
    )


def test_a_missing_pooled_sequence(fresh: tuple[Engine, str]) -> None:
    engine, _ = fresh
    models = make_models()
    create(engine, models)
    with engine.begin() as conn:  # its native sequence, or its row where there is none
        models.item_id.drop(conn)
    report = doctor(engine, models.metadata)
    assert problems(report) == [("schema", "sequence doc_item_id")]
    assert "op.create_pooled_sequence('doc_item_id', 10" in (report.problems[0].fix or "")


def test_a_sequences_table_of_version_0_1(engines: Any) -> None:
    """MariaDB: a sequences table whose names compare case-insensitively (0.1's collation)."""
    with fresh_engine(engines, "mysql") as (engine, _):
        models = make_models()
        create(engine, models)
        with engine.begin() as conn:
            conn.exec_driver_sql(
                "ALTER TABLE sequences MODIFY name VARCHAR(64) "
                "CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL"
            )
        report = doctor(engine, models.metadata)
    assert ("schema", "table sequences") in problems(report)
    fixes = {f.fix for f in report.problems}
    assert "in a migration: op.make_sequence_names_case_sensitive('sequences')" in fixes


def test_a_mariadb_sequence_behind_an_import_is_read_exactly_or_flagged_when_cached(
    engines: Any,
) -> None:
    """MariaDB's row of a sequence holds the value after its cache, which no one can read.

    The library creates its sequences ``NOCACHE``: after one block was taken and rows
    were imported past it, doctor reads the exact next block and names the resync.
    A sequence given a cache by hand (MariaDB's default, 1,000) is a problem while
    the keys reach into that cache (doctor cannot tell imported keys from its own),
    fixed by ``NOCACHE``; never reported ahead or skipped as healthy.
    """
    with fresh_engine(engines, "mysql") as (engine, _):
        models = make_models()
        create(engine, models)  # the first block: 1 to 10; the row says 11
        with engine.begin() as conn:
            conn.execute(sa.insert(models.items), [{"id": i} for i in range(100, 5001)])
        found = {(f.check, f.subject): f for f in doctor(engine, models.metadata).findings}
        behind = found[("behind", "doc_items.id")]
        assert behind.status == "problem", behind
        assert behind.details == {"next_value": 11, "max_key": 5000}, behind
        assert "resync" in behind.fix, behind.fix
        with engine.begin() as conn:
            conn.execute(sa.text("ALTER SEQUENCE doc_item_id CACHE 1000"))
            assert conn.scalar(sa.text("SELECT NEXTVAL(doc_item_id)")) == 11  # the row: 10011
        found = {(f.check, f.subject): f for f in doctor(engine, models.metadata).findings}
        behind = found[("behind", "doc_items.id")]
        assert behind.status == "problem", behind
        assert "may collide" in behind.message, behind.message
        assert behind.fix.startswith("ALTER SEQUENCE doc_item_id NOCACHE"), behind.fix
        with engine.begin() as conn:  # the block the next process takes collides
            assert conn.scalar(sa.text("SELECT NEXTVAL(doc_item_id)")) == 21


def test_doctor_in_the_callers_transaction_leaves_it_to_the_caller(
    fresh: tuple[Engine, str],
) -> None:
    """doctor(conn) in an open transaction: the caller's rollback still undoes its insert.

    Spanner has no savepoints to nest the checks in: a clear error there.
    """
    engine, _ = fresh
    models = make_models()
    create(engine, models)
    before = counts(engine, models)
    with engine.connect() as conn:
        conn.begin()
        conn.execute(sa.insert(models.orders))
        if engine.dialect.name.startswith("spanner"):
            with pytest.raises(SeqKeysError, match="Spanner has no savepoints"):
                doctor(conn, models.metadata)
        else:
            doctor(conn, models.metadata)  # its order check makes and drops a temporary table
        assert conn.in_transaction()
        conn.rollback()
    assert counts(engine, models) == before


def _drifted_models() -> tuple[sa.MetaData, TableSequence, TableSequence]:
    """Two BigInteger keys of TableSequences, whose tables the test creates by hand."""
    metadata = sa.MetaData()
    sequences_table(metadata)
    text_no = TableSequence("doc_text_no", mode="separate")
    minted_no = TableSequence("doc_minted_no", mode="separate")
    big = sa.BigInteger()
    sa.Table("doc_textkeys", metadata, sa.Column("id", big, primary_key=True, default=text_no))
    sa.Table("doc_minted", metadata, sa.Column("id", big, primary_key=True, default=minted_no))
    return metadata, text_no, minted_no


#: per engine: the key column of doc_minted with a default of its own (None: none here)
_MINTED_DDL = {
    "postgresql": "CREATE TABLE doc_minted (id SERIAL PRIMARY KEY)",
    "mysql": "CREATE TABLE doc_minted (id BIGINT AUTO_INCREMENT PRIMARY KEY)",
    # SQLite's INTEGER PRIMARY KEY (what the library recommends there) is not flagged
    "sqlite": "CREATE TABLE doc_minted (id INTEGER PRIMARY KEY)",
    "spanner": "CREATE TABLE doc_minted (id INT64 NOT NULL "
    "DEFAULT (GET_NEXT_SEQUENCE_VALUE(SEQUENCE doc_minted_seq))) PRIMARY KEY (id)",
}


def _run_fix(engine: Engine, fix: str) -> None:
    """Run a printed ``in a migration: ...`` fix with Alembic's ``op``, as a migration would."""
    from alembic.migration import MigrationContext
    from alembic.operations import Operations
    from sqlalchemy.dialects import mysql, postgresql

    code = fix.removeprefix("in a migration: ")
    with engine.begin() as conn:
        op = Operations(MigrationContext.configure(conn))
        exec(code, {"op": op, "sa": sa, "mysql": mysql, "postgresql": postgresql})


def test_the_real_key_column_is_checked_against_its_strategy(fresh: tuple[Engine, str]) -> None:
    """The database's column, not the model's: text keys (MAX compares text) and a column
    with a key minter of its own (SERIAL, AUTO_INCREMENT) are problems, each with its fix."""
    engine, _ = fresh
    name = "spanner" if engine.dialect.name.startswith("spanner") else engine.dialect.name
    metadata, text_no, minted_no = _drifted_models()
    metadata.tables["sequences"].create(engine)
    create_table_sequence(engine, text_no.name, 10)
    minted_no.create(engine)
    text_ddl = "CREATE TABLE doc_textkeys (id VARCHAR(20) NOT NULL PRIMARY KEY)"
    if name == "spanner":
        text_ddl = "CREATE TABLE doc_textkeys (id STRING(20) NOT NULL) PRIMARY KEY (id)"
    with engine.begin() as conn:
        if name == "spanner":
            conn.exec_driver_sql(
                "CREATE SEQUENCE doc_minted_seq OPTIONS (sequence_kind='bit_reversed_positive')"
            )
        conn.exec_driver_sql(text_ddl)
        conn.exec_driver_sql(_MINTED_DDL[name])
    with engine.begin() as conn:
        conn.exec_driver_sql("INSERT INTO doc_textkeys (id) VALUES ('9'), ('10')")
    report = doctor(engine, metadata)
    found = {(f.check, f.subject): f for f in report.findings}
    text = [f for f in report.problems if f.subject == "doc_textkeys.id"]
    assert [f.check for f in text] == ["schema"], report.format()
    assert "text" in text[0].message, text[0].message
    assert "(20)" in text[0].message, text[0].message  # VARCHAR(20), Spanner's STRING(20)
    behind = found[("behind", "doc_textkeys.id")]
    assert behind.status == "skipped", behind
    assert "text" in behind.message, behind
    minted = [f for f in report.problems if f.subject == "doc_minted.id"]
    if name == "postgresql":  # SERIAL: a 32-bit INTEGER, and nextval(...) of its own
        assert len(minted) == 2, report.format()
        assert any("32 bits" in f.message for f in minted)
        assert any("nextval(" in f.message for f in minted)
    elif name == "mysql":
        (auto,) = minted
        assert "AUTO_INCREMENT" in auto.message
    elif name == "spanner":  # its identity columns are not reflected: a sequence default is
        (default,) = minted
        assert "GET_NEXT_SEQUENCE_VALUE" in default.message
        assert default.fix is not None
        _run_fix(engine, default.fix)
        after = {(f.check, f.subject): f.status for f in doctor(engine, metadata).findings}
        assert after[("schema", "doc_minted.id")] == "ok"
    else:
        assert minted == [], report.format()
        assert found[("schema", "doc_minted.id")].status == "ok"
    if name in ("postgresql", "mysql"):  # each printed fix, run as a migration, fixes it
        for finding in text + minted:
            assert finding.fix is not None
            assert finding.fix.startswith("in a migration: op."), finding.fix
            _run_fix(engine, finding.fix)
        after = doctor(engine, metadata)
        # the keys compare as numbers now: the sequence's 10 is the table's largest key
        assert problems(after) == [("behind", "doc_textkeys.id")], after.format()
        assert after.problems[0].details == {"next_value": 10, "max_key": 10}


def test_a_32_bit_key_column_is_a_problem(pg_or_mariadb: tuple[Engine, str]) -> None:
    engine, _ = pg_or_mariadb
    metadata, _text_no, minted_no = _drifted_models()
    metadata.tables["sequences"].create(engine)
    minted_no.create(engine)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE doc_minted (id INTEGER NOT NULL PRIMARY KEY)")
    metadata.remove(metadata.tables["doc_textkeys"])
    report = doctor(engine, metadata)
    assert problems(report) == [("schema", "doc_minted.id")], report.format()
    assert "INTEGER" in report.problems[0].message
    assert "type_=sa.BigInteger()" in (report.problems[0].fix or "")


def test_the_printed_resync_command_can_be_pasted(engines: Any) -> None:
    """Names with spaces, % and quotes, and a URL with a password: the fix, split as a shell
    splits it, is the right command line (the URL a $DATABASE_URL the user sets)."""
    with engines.fresh_database("postgresql", "doctor") as url:
        secret = sa.make_url(url).set(password="s3cret pass%")
        engine = sa.create_engine(secret)
        try:
            with engine.begin() as conn:
                conn.exec_driver_sql('CREATE SCHEMA "Sales"')
            metadata = sa.MetaData()
            sequences_table(metadata)
            invoice_no = TableSequence("inv'no %s", mode="batch")
            invoices = sa.Table(
                "Invoice%s list",
                metadata,
                sa.Column("Id", sa.BigInteger, primary_key=True, default=invoice_no),
                schema="Sales",
            )
            metadata.create_all(engine)
            create_table_sequence(engine, "inv'no %s")
            with engine.begin() as conn:
                conn.execute(sa.insert(invoices).values(Id=5000))
            (finding,) = doctor(engine, metadata).problems
            fix = finding.fix or ""
            assert "s3cret" not in fix, fix
            assert "***" not in fix, fix
            argv = shlex.split(fix, comments=True)
            assert argv == [
                "seqkeys",
                "resync",
                "--url",
                "$DATABASE_URL",
                "--sequence",
                "inv'no %s",
                "--table",
                "Invoice%s list",
                "--column",
                "Id",
                "--schema",
                "Sales",
            ], fix
            assert "DATABASE_URL" in fix.partition("#")[2]  # says what to set
            pasted = [
                secret.render_as_string(hide_password=False) if a == "$DATABASE_URL" else a
                for a in argv[1:]
            ]
            assert main(pasted) == 0
            assert doctor(engine, metadata).healthy
        finally:
            engine.dispose()


def test_server_uuid_is_suggested_only_where_it_compiles(engines: Any) -> None:
    """MariaDB 10.11: server_uuid() is UUID() into a UUID column only; no CHAR(36) key is
    offered it, and the function is shown as written, without a default's parentheses."""
    metadata = sa.MetaData()
    sa.Table(
        "doc_text", metadata, sa.Column("id", CombGuid(), primary_key=True, default=new_comb_guid)
    )
    sa.Table(
        "doc_bin",
        metadata,
        sa.Column("id", CombGuid(binary=True), primary_key=True, default=new_comb_guid),
    )
    sa.Table(
        "doc_native",
        metadata,
        sa.Column("id", CombGuid(native_uuid=True), primary_key=True, default=new_uuid7),
    )
    with fresh_engine(engines, "mysql") as (engine, _):
        metadata.create_all(engine)
        report = doctor(engine, metadata)
    (server,) = [f for f in report.findings if f.subject == "server_uuid()"]
    function = server.details["server_uuid"]
    # as written, without a column default's parentheses: the docs show UUID()
    assert function in ("UUID()", "UUID_v7()", "UUID_TO_BIN(UUID(), 1)"), server
    assert f"({function})" in server.message, server.message
    assert f"(({function}))" not in server.message, server.message
    if function == "UUID()":  # MariaDB 10.7 to 11.6: the UUID type only
        assert "doc_native.id" in server.message, server.message
        assert "doc_text.id" not in server.message, server.message
        assert "doc_bin.id" not in server.message, server.message


def test_a_mariadb_sequence_never_called_starts_at_its_start(engines: Any) -> None:
    """Its row holds the start itself: exactly that, never a range below it."""
    with fresh_engine(engines, "mysql") as (engine, _):
        models = make_models()
        models.metadata.create_all(engine)
        models.item_id.create(engine, checkfirst=True)
        found = {(f.check, f.subject): f for f in doctor(engine, models.metadata).findings}
        behind = found[("behind", "doc_items.id")]
        assert behind.status == "ok", behind
        assert "starts its next block at 1," in behind.message, behind.message
