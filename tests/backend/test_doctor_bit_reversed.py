"""seqkeys doctor on bit-reversed keys whose counter is behind the keys the table holds.

A key of ``BitReversed(TableSequence(...))`` or ``BitReversedSequence`` is
``reverse_bits(counter)``: ``MAX(key)`` says nothing of the counters in use.
Before, doctor had no ``behind`` check for them and called a table holding the
keys of counters 1..10, its counter at 1, healthy while the next insert
collided. Also: the fix for an unsigned Snowflake key column names
``sqlalchemy_seqkeys.UnsignedBigInteger()``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

import sqlalchemy_seqkeys
from sqlalchemy_seqkeys import (
    BitReversed,
    BitReversedSequence,
    Snowflake,
    SnowflakeLayout,
    TableSequence,
    UnsignedBigInteger,
    doctor,
    reverse_bits,
    sequences_table,
)
from sqlalchemy_seqkeys.cli import main
from tests.backend.test_doctor import fresh_engine, problems, write_models

pytestmark = pytest.mark.backend

#: the module (``sqlalchemy_seqkeys.doctor`` is the function)
doctor_module = importlib.import_module("sqlalchemy_seqkeys.doctor")

ENGINES = ("sqlite", "postgresql", "mysql")  # mysql: the MariaDB server here
ACCOUNTS, CUSTOMERS = "doc_acct", "doc_cust"
SUBJECTS = (f"{ACCOUNTS}.id", f"{CUSTOMERS}.id")


@dataclass
class BitModels:
    metadata: sa.MetaData
    accounts: sa.Table  # BitReversed(TableSequence)
    customers: sa.Table  # BitReversedSequence
    counter: TableSequence
    customer_id: BitReversedSequence


def bit_models(skip_range: tuple[int, int] | None = None) -> BitModels:
    metadata = sa.MetaData()
    sequences_table(metadata)
    counter = TableSequence("doc_acct_ctr", mode="batch")
    accounts = sa.Table(
        ACCOUNTS,
        metadata,
        sa.Column(
            "id",
            sa.BigInteger,
            primary_key=True,
            default=BitReversed(counter, skip_range=skip_range),
        ),
    )
    customer_id = BitReversedSequence("doc_cust_id", skip_range=skip_range)
    customers = sa.Table(
        CUSTOMERS, metadata, sa.Column("id", sa.BigInteger, primary_key=True, default=customer_id)
    )
    return BitModels(metadata, accounts, customers, counter, customer_id)


def create(engine: Engine, models: BitModels) -> None:
    models.metadata.create_all(engine)
    models.counter.create(engine)
    models.customer_id.create(engine)


def import_keys(engine: Engine, models: BitModels, counters: range) -> None:
    """The keys of ``counters`` in both tables, the counters left where they are."""
    with engine.begin() as conn:
        for table in (models.accounts, models.customers):
            conn.execute(table.insert(), [{"id": reverse_bits(c)} for c in counters])


def behind(report: Any) -> dict[str, Any]:
    return {f.subject: f for f in report.findings if f.check == "behind" and f.subject in SUBJECTS}


def run_fix(engine: Engine, fix: str) -> None:
    """Run a printed ``in a migration: ...`` fix with Alembic's ``op``, as a migration would
    (one that imports sqlalchemy_seqkeys where the fix says so)."""
    from alembic.migration import MigrationContext
    from alembic.operations import Operations
    from sqlalchemy.dialects import mysql, postgresql

    importlib.import_module("sqlalchemy_seqkeys.alembic")  # registers the library's ops

    assert fix.startswith("in a migration: "), fix
    code = fix.removeprefix("in a migration: ")
    names: dict[str, Any] = {"sa": sa, "mysql": mysql, "postgresql": postgresql}
    if "sqlalchemy_seqkeys." in code:
        assert "import sqlalchemy_seqkeys" in code, code
        names["sqlalchemy_seqkeys"] = sqlalchemy_seqkeys
    with engine.begin() as conn:
        exec(code, {"op": Operations(MigrationContext.configure(conn)), **names})


@pytest.fixture(params=ENGINES)
def fresh(request: pytest.FixtureRequest, engines: Any) -> Iterator[tuple[Engine, str]]:
    with fresh_engine(engines, request.param) as made:
        yield made


def test_a_counter_behind_the_keys_is_a_problem_and_its_fix_works(
    fresh: tuple[Engine, str],
) -> None:
    engine, _ = fresh
    models = bit_models()
    create(engine, models)
    import_keys(engine, models, range(1, 11))  # as after a downgrade and upgrade, or an import
    report = doctor(engine, models.metadata)
    assert not report.healthy
    assert sorted(problems(report)) == sorted(("behind", s) for s in SUBJECTS), report.format()
    for finding in behind(report).values():
        assert finding.details["max_counter"] == 10
        assert finding.details["next_value"] == 1
        assert "counter 10" in finding.message
        assert "collide" in finding.message
        assert (
            finding.fix
            == {
                f"{ACCOUNTS}.id": "in a migration: op.resync_bit_reversed_table_sequence("
                f"'doc_acct_ctr', {ACCOUNTS!r}, 'id')",
                f"{CUSTOMERS}.id": "in a migration: op.resync_bit_reversed_sequence("
                f"'doc_cust_id', {CUSTOMERS!r}, 'id')",
            }[finding.subject]
        )
        run_fix(engine, finding.fix)
    after = doctor(engine, models.metadata)
    assert after.healthy, after.format()
    statuses = {s: f.status for s, f in behind(after).items()}
    assert statuses[f"{ACCOUNTS}.id"] == "ok"
    # MariaDB caches sequence values: the next one lies from 1 to 11, and the keys reach 10
    assert statuses[f"{CUSTOMERS}.id"] in (("ok", "skipped") if "mysql" in engine.name else ("ok",))
    with engine.begin() as conn:  # and the inserts succeed
        for table in (models.accounts, models.customers):
            for _ in range(3):
                conn.execute(table.insert())
    with engine.connect() as conn:
        for table in (models.accounts, models.customers):
            keys = conn.scalars(sa.select(table.c.id)).all()
            assert len(keys) == 13
            assert max(reverse_bits(k) for k in keys) == 13


def test_a_healthy_bit_reversed_table_is_ok(fresh: tuple[Engine, str]) -> None:
    engine, _ = fresh
    models = bit_models()
    create(engine, models)
    with engine.begin() as conn:
        for table in (models.accounts, models.customers):
            for _ in range(5):
                conn.execute(table.insert())
    report = doctor(engine, models.metadata)
    assert report.healthy, report.format()
    found = behind(report)
    assert found[f"{ACCOUNTS}.id"].status == "ok"
    assert found[f"{ACCOUNTS}.id"].details["max_counter"] == 5
    assert found[f"{CUSTOMERS}.id"].status in ("ok", "skipped")
    assert found[f"{CUSTOMERS}.id"].details["max_counter"] == 5


def test_an_empty_table_is_ok(fresh: tuple[Engine, str]) -> None:
    engine, _ = fresh
    models = bit_models()
    create(engine, models)
    report = doctor(engine, models.metadata)
    assert report.healthy, report.format()
    assert {f.status for f in behind(report).values()} == {"ok"}


def test_keys_in_the_skip_range_are_no_counters_in_use(fresh: tuple[Engine, str]) -> None:
    """Keys the skip range keeps out (imported ones) are never handed out: no collision."""
    engine, _ = fresh
    imported = [reverse_bits(c) for c in range(1, 11)]
    models = bit_models(skip_range=(min(imported), max(imported)))
    create(engine, models)
    with engine.begin() as conn:
        for table in (models.accounts, models.customers):
            conn.execute(table.insert(), [{"id": k} for k in imported])
    report = doctor(engine, models.metadata)
    assert report.healthy, report.format()
    assert {f.status for f in behind(report).values()} == {"ok"}


def test_past_the_scan_limit_behind_is_skipped(
    fresh: tuple[Engine, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, _ = fresh
    models = bit_models()
    create(engine, models)
    import_keys(engine, models, range(1, 11))
    monkeypatch.setattr(doctor_module, "BIT_REVERSED_SCAN_LIMIT", 9)
    report = doctor(engine, models.metadata)
    for finding in behind(report).values():
        assert finding.status == "skipped"
        assert "more than 9 rows" in finding.message
    monkeypatch.setattr(doctor_module, "BIT_REVERSED_SCAN_LIMIT", 10)
    assert sorted(problems(doctor(engine, models.metadata))) == sorted(
        ("behind", s) for s in SUBJECTS
    )


def test_the_cli_exits_1(
    engines: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    source = (
        "import sqlalchemy as sa\n"
        "from sqlalchemy_seqkeys import BitReversed, TableSequence, sequences_table\n"
        "metadata = sa.MetaData()\n"
        "sequences_table(metadata)\n"
        f"sa.Table({ACCOUNTS!r}, metadata, sa.Column('id', sa.BigInteger, primary_key=True,\n"
        "         default=BitReversed(TableSequence('doc_acct_ctr', mode='batch'))))\n"
    )
    spec = write_models(tmp_path, monkeypatch, source)
    with fresh_engine(engines, "sqlite") as (engine, url):
        models = bit_models()
        create(engine, models)
        import_keys(engine, models, range(1, 11))
        assert main(["doctor", "--url", url, "--models", spec]) == 1
        out = capsys.readouterr().out
        assert f"behind        {ACCOUNTS}.id" in out
        assert "PROBLEM" in out


def test_spanner_says_skipped_not_ok(engines: Any) -> None:
    """Spanner's sequence position is not read: ``behind`` is skipped, never left out."""
    with fresh_engine(engines, "spanner") as (engine, _):
        metadata = sa.MetaData()
        customer_id = BitReversedSequence("doc_cust_id", metadata=metadata)
        sa.Table(
            CUSTOMERS,
            metadata,
            sa.Column("id", sa.BigInteger, primary_key=True, default=customer_id),
        )
        metadata.create_all(engine)
        report = doctor(engine, metadata)
        assert behind(report)[f"{CUSTOMERS}.id"].status == "skipped"


# -- an unsigned Snowflake layout's column: UnsignedBigInteger() ---------------------------

_NARROW = {  # a column that cannot hold the ids of an unsigned layout, per engine
    "sqlite": "NUMERIC(20, 0)",  # bound as a float there
    "postgresql": "BIGINT",
    "mysql": "BIGINT",
}


def test_an_unsigned_layouts_column_is_told_to_be_unsigned_big_integer(
    fresh: tuple[Engine, str],
) -> None:
    engine, _ = fresh
    name = engine.dialect.name
    metadata = sa.MetaData()
    layout = SnowflakeLayout.discord(unsigned=True)
    sa.Table(
        "doc_unsigned",
        metadata,
        sa.Column(
            "id",
            UnsignedBigInteger(),
            primary_key=True,
            default=Snowflake(worker_id=7, layout=layout),
        ),
    )
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE TABLE doc_unsigned (id {_NARROW[name]} NOT NULL PRIMARY KEY)")
    report = doctor(engine, metadata)
    assert problems(report) == [("schema", "doc_unsigned.id")], report.format()
    fix = report.problems[0].fix or ""
    assert "type_=sqlalchemy_seqkeys.UnsignedBigInteger()" in fix
    assert "Numeric(20, 0)" not in fix
    assert "unsigned=True" not in fix
    if name == "postgresql":
        assert "postgresql_using='id::numeric(20, 0)'" in fix
    run_fix(engine, fix)
    after = doctor(engine, metadata)
    assert after.healthy, after.format()
