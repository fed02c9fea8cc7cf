"""Sequences whose server caches values: doctor never calls them healthy on a guess.

MariaDB caches 1000 values of a sequence unless it says NOCACHE (the library's
sequences too): its row holds the value after the cache. Before, a table whose
keys reached into that range was ``skipped`` ("cannot tell") and the report
healthy, while the next process's block collided. PostgreSQL's CACHE > 1 (a
sequence made by hand) lets each session hold values below ``last_value``: doctor
said ``ok``, and two pooled connections raised a false SequenceMovedBackwardsError.
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import (
    BitReversed,
    BitReversedSequence,
    PooledSequence,
    PooledSequenceMismatchError,
    doctor,
    resync_pooled_sequence,
    reverse_bits,
)
from sqlalchemy_seqkeys.doctor import keys_behind
from tests.backend.test_doctor import fresh_engine

pytestmark = pytest.mark.backend


def _orders(name: str, size: int = 50) -> tuple[sa.MetaData, sa.Table, PooledSequence]:
    metadata = sa.MetaData()
    pooled = PooledSequence(name, batch_size=size, metadata=metadata)
    table = sa.Table(
        "dr_orders", metadata, sa.Column("id", sa.BigInteger, primary_key=True, default=pooled)
    )
    return metadata, table, pooled


def _behind(report: Any, subject: str = "dr_orders.id") -> list[Any]:
    return [f for f in report.findings if (f.check, f.subject) == ("behind", subject)]


# -- MariaDB: CACHE 1000 -----------------------------------------------------------------


def test_mariadb_keys_inside_the_cache_are_a_problem_and_nocache_settles_it(
    engines: Any,
) -> None:
    """A sequence given MariaDB's default cache by hand (the library's own are NOCACHE)."""
    metadata, orders, _ = _orders("dr_mc")
    with fresh_engine(engines, "mysql") as (engine, _url):
        metadata.create_all(engine)
        with engine.begin() as conn:
            conn.exec_driver_sql("ALTER SEQUENCE dr_mc CACHE 1000")
            conn.execute(orders.insert(), [{} for _ in range(50)])  # block 1..50: row 50001
            conn.execute(orders.insert(), [{"id": i} for i in range(51, 2001)])  # an import
        report = doctor(engine, metadata)
        assert not report.healthy, report.format()
        (found,) = _behind(report)
        assert found.status == "problem", report.format()
        assert "may collide" in found.message, found.message
        assert "51 to 50001" in found.message, found.message
        assert found.fix is not None
        assert found.fix.startswith("ALTER SEQUENCE dr_mc NOCACHE"), found.fix
        with engine.connect() as conn:  # no resync for autogenerate to write: it cannot tell
            assert keys_behind(conn, metadata) == []
        with engine.begin() as conn:
            conn.exec_driver_sql(found.fix.split(" (", 1)[0])
        after = doctor(engine, metadata)
        assert after.healthy, after.format()
        assert [f.status for f in _behind(after)] == ["ok"], after.format()
        with engine.begin() as conn:  # the next block starts past the keys
            assert conn.scalar(sa.text("SELECT NEXTVAL(dr_mc)")) == 50001


def test_mariadb_a_resynced_sequence_is_read_exactly(engines: Any) -> None:
    """A row a SETVAL wrote, below MINVALUE + CACHE * INCREMENT, no refill wrote: the next
    value is that row's, so the resync doctor prints makes it healthy."""
    metadata, orders, _ = _orders("dr_mr")
    with fresh_engine(engines, "mysql") as (engine, _url):
        metadata.create_all(engine)
        with engine.begin() as conn:  # an import before the application ran
            conn.execute(orders.insert(), [{"id": i} for i in range(1, 501)])
        (found,) = _behind(doctor(engine, metadata))
        assert found.status == "problem", found
        assert "resync_pooled_sequence(engine, 'dr_mr', 'dr_orders', 'id')" in (found.fix or "")
        resync_pooled_sequence(engine, "dr_mr", "dr_orders", "id")
        after = doctor(engine, metadata)
        assert after.healthy, after.format()
        (ok,) = _behind(after)
        assert ok.details["next_value"] == 501, ok


# -- PostgreSQL: CACHE > 1 ---------------------------------------------------------------


def test_postgresql_a_pooled_sequence_with_cache_is_a_problem(engines: Any) -> None:
    metadata, orders, _ = _orders("dr_pc")
    with fresh_engine(engines, "postgresql") as (engine, _url):
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE SEQUENCE dr_pc INCREMENT BY 50 CACHE 10")
        orders.create(engine)
        report = doctor(engine, metadata)
        assert not report.healthy, report.format()
        (found,) = _behind(report)
        assert found.status == "problem", report.format()
        assert "CACHE 10" in found.message, found.message
        assert found.fix is not None
        assert found.fix.startswith("ALTER SEQUENCE dr_pc CACHE 1, then restart"), found.fix
        with engine.begin() as conn:
            conn.exec_driver_sql("ALTER SEQUENCE dr_pc CACHE 1")
        after = doctor(engine, metadata)
        assert after.healthy, after.format()


def test_postgresql_a_pooled_sequence_with_cache_is_refused(engines: Any) -> None:
    pooled = PooledSequence("dr_pr", batch_size=50)
    with fresh_engine(engines, "postgresql") as (engine, _url):
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE SEQUENCE dr_pr INCREMENT BY 50 CACHE 10")
        with (
            engine.connect() as conn,
            pytest.raises(PooledSequenceMismatchError, match=r"CACHE 10.*CACHE 1, then restart"),
        ):
            pooled.next_values(conn, 1)
        with engine.begin() as conn:
            conn.exec_driver_sql("ALTER SEQUENCE dr_pr CACHE 1")
        other = PooledSequence("dr_pr", batch_size=50)  # as a process started again
        with engine.connect() as first, engine.connect() as second:
            assert other.next_values(first, 1) == [1]
            other.forget_blocks()
            assert other.next_values(second, 1) == [51]


def test_postgresql_a_cached_sequence_is_a_problem_if_the_librarys_else_not_checked(
    engines: Any,
) -> None:
    """CACHE 20: a BitReversedSequence's (the library made it CACHE 1: a problem); a
    user's own sa.Sequence under BitReversed works, and doctor cannot tell (skipped)."""
    metadata = sa.MetaData()
    own = sa.Column(
        "id",
        sa.BigInteger,
        primary_key=True,
        default=BitReversedSequence("dr_bo", metadata=metadata),
    )
    sa.Table("dr_own", metadata, own)
    theirs = sa.Column(
        "id", sa.BigInteger, primary_key=True, default=BitReversed(sa.Sequence("dr_bc"))
    )
    sa.Table("dr_bits", metadata, theirs)
    with fresh_engine(engines, "postgresql") as (engine, _url):
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE SEQUENCE dr_bc CACHE 20")
        metadata.create_all(engine)
        with engine.begin() as conn:
            conn.exec_driver_sql("ALTER SEQUENCE dr_bo CACHE 20")
        report = doctor(engine, metadata)
        (found,) = _behind(report, "dr_own.id")
        assert found.status == "problem", report.format()
        assert "CACHE 20" in found.message, found.message
        assert "the library creates its sequences CACHE 1" in found.message, found.message
        (found,) = _behind(report, "dr_bits.id")
        assert found.status == "skipped", report.format()
        assert found.message.startswith("not checked: sequence 'dr_bc' has CACHE 20"), found
        assert "PooledSequence" not in found.message, found.message


def test_mariadb_a_cached_sequence_restarted_below_its_start_is_a_problem(engines: Any) -> None:
    """RESTART WITH 1 on a sequence of START 100 (MariaDB's default cache): its next value
    may be as low as MINVALUE, not START; an imported key there collides."""
    metadata = sa.MetaData()
    sequence = sa.Sequence("dr_rs", start=100, metadata=metadata)
    table = sa.Table(
        "dr_restart",
        metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, default=BitReversed(sequence)),
    )
    with fresh_engine(engines, "mysql") as (engine, _url):
        metadata.create_all(engine)
        with engine.begin() as conn:
            conn.exec_driver_sql("ALTER SEQUENCE dr_rs RESTART WITH 1")
            conn.execute(table.insert())  # counter 1; the cache holds 2 to 1000
            conn.execute(table.insert(), {"id": reverse_bits(50)})  # an import: counter 50
        report = doctor(engine, metadata)
        (found,) = _behind(report, "dr_restart.id")
        assert found.status == "problem", report.format()
        assert found.details["lowest_next_value"] == 2, found
        with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:  # what it warns of
            conn.execute(table.insert(), [{} for _ in range(60)])
