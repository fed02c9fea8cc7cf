"""seqkeys doctor on bit-reversed keys whose counter is not a TableSequence, a
BitReversedSequence or a native sequence doctor could read (review of doctor).

Before: ``BitReversed(PooledSequence(...))`` had no ``behind`` check at all, and
doctor called a table healthy whose next insert was a duplicate key; another
callable source was passed over without a word; ``BitReversed(sa.Sequence(...))``
on SQLite, which has no sequences, made doctor (and ``seqkeys doctor``) raise
NotImplementedError from SQLAlchemy's ``get_sequence_names``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import (
    BitReversed,
    PooledSequence,
    doctor,
    reverse_bits,
    sequences_table,
)
from sqlalchemy_seqkeys.cli import main
from sqlalchemy_seqkeys.doctor import keys_behind
from tests.backend.test_doctor import fresh_engine, write_models
from tests.backend.test_doctor_bit_reversed import run_fix

pytestmark = pytest.mark.backend

ENGINES = ("sqlite", "postgresql", "mysql")  # mysql: the MariaDB server here
SUBJECT = "dr_bp.id"


def _pooled_models() -> tuple[sa.MetaData, sa.Table, PooledSequence]:
    metadata = sa.MetaData()
    sequences_table(metadata)
    pooled = PooledSequence("dr_bp_counter", batch_size=1, metadata=metadata)
    table = sa.Table(
        "dr_bp",
        metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, default=BitReversed(pooled)),
    )
    return metadata, table, pooled


def _behind(report: Any, subject: str = SUBJECT) -> list[Any]:
    return [f for f in report.findings if (f.check, f.subject) == ("behind", subject)]


@pytest.mark.parametrize("name", ENGINES)
def test_a_pooled_counter_behind_bit_reversed_keys_is_a_problem(engines: Any, name: str) -> None:
    metadata, table, _ = _pooled_models()
    with fresh_engine(engines, name) as (engine, _url):
        metadata.create_all(engine)
        with engine.begin() as conn:  # an import that kept the keys of counters 1..5
            conn.execute(table.insert(), [{"id": reverse_bits(c)} for c in range(1, 6)])
        report = doctor(engine, metadata)
        assert not report.healthy, report.format()
        (found,) = _behind(report)
        assert found.status == "problem", report.format()
        assert found.details["max_counter"] == 5, found
        assert "collide" in found.message, found.message
        assert found.fix is not None
        with engine.connect() as conn:  # autogenerate's resync finds it too
            assert [c.table.name for c, _ in keys_behind(conn, metadata)] == ["dr_bp"]
        with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
            conn.execute(table.insert())  # what doctor warns of: a duplicate key
        run_fix(engine, found.fix)
        after = doctor(engine, metadata)  # MariaDB's: NOCACHE, its row read exactly
        assert after.healthy, after.format()
        assert [f.status for f in _behind(after)] == ["ok"], after.format()
        with engine.begin() as conn:
            for _ in range(3):
                conn.execute(table.insert())


@pytest.mark.parametrize("name", ENGINES)
def test_a_healthy_pooled_counter_behind_bit_reversed_keys_is_ok(engines: Any, name: str) -> None:
    metadata, table, _ = _pooled_models()
    with fresh_engine(engines, name) as (engine, _url):
        metadata.create_all(engine)
        with engine.begin() as conn:
            conn.execute(table.insert())
        report = doctor(engine, metadata)
        assert report.healthy, report.format()
        assert [f.status for f in _behind(report)] == ["ok"], report.format()
        schema = [f for f in report.findings if f.subject == "sequence dr_bp_counter"]
        assert [f.status for f in schema] == ["ok"], report.format()


@pytest.mark.parametrize("name", ENGINES)
def test_a_missing_pooled_counter_is_a_problem(engines: Any, name: str) -> None:
    metadata, _, pooled = _pooled_models()
    with fresh_engine(engines, name) as (engine, _url):
        metadata.create_all(engine)
        pooled.drop(engine)
        report = doctor(engine, metadata)
        assert ("schema", "sequence dr_bp_counter") in [
            (f.check, f.subject) for f in report.problems
        ]


def _counter(context: Any) -> int:  # a counter doctor cannot read
    return 1


def test_another_callable_source_is_said_to_be_unchecked(engines: Any) -> None:
    metadata = sa.MetaData()
    sa.Table(
        "dr_fn",
        metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, default=BitReversed(_counter)),
    )
    with fresh_engine(engines, "sqlite") as (engine, _url):
        metadata.create_all(engine)
        report = doctor(engine, metadata)
        (found,) = _behind(report, "dr_fn.id")
        assert found.status == "skipped", report.format()
        assert found.message.startswith("not checked"), found.message
        assert "_counter" in found.message, found.message


BIT_SEQUENCE_MODELS = """
import sqlalchemy as sa
from sqlalchemy_seqkeys import BitReversed

metadata = sa.MetaData()
sa.Table("dr_brs", metadata, sa.Column(
    "id", sa.BigInteger, primary_key=True, default=BitReversed(sa.Sequence("dr_brs_seq"))
))
"""


def test_a_native_sequence_counter_on_sqlite_is_a_problem_not_a_crash(
    engines: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    models = write_models(tmp_path, monkeypatch, BIT_SEQUENCE_MODELS)
    from sqlalchemy_seqkeys.doctor import load_metadata

    metadata = load_metadata(models)
    with fresh_engine(engines, "sqlite") as (engine, url):
        metadata.create_all(engine)
        report = doctor(engine, metadata)
        found = [f for f in report.problems if f.subject == "sequence dr_brs_seq"]
        assert [f.check for f in found] == ["schema"], report.format()
        assert "has no sequences" in found[0].message, found[0].message
        assert found[0].fix is not None
        capsys.readouterr()
        assert main(["doctor", "--url", url, "--models", models]) == 1
        out, err = capsys.readouterr()
        assert "has no sequences" in out, (out, err)
        assert "Traceback" not in err, err
        assert "NotImplementedError" not in err, err


def test_autogenerate_resyncs_a_pooled_counter_behind_bit_reversed_keys() -> None:
    """keys_behind lists it (above); autogenerate writes the resync doctor prints."""
    from sqlalchemy_seqkeys.alembic.behind import resync_of

    _, table, _ = _pooled_models()
    column = table.c.id
    resync = resync_of(column, column.default.arg)  # type: ignore[union-attr]
    assert resync is not None
    assert resync.render() == "op.resync_bit_reversed_sequence('dr_bp_counter', 'dr_bp', 'id')"
