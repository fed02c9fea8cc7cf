"""``python -m benchmarks NAME``: each benchmark runs from the checkout and prints what it promises.

The benchmarks are a development package at the repository's root, not part of
the wheel (tests/test_packaging.py checks that); the report has its own test,
tests/test_bench_report.py.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

import benchmarks
from benchmarks import sequences
from benchmarks.__main__ import main

ROOT = Path(__file__).parent.parent


def test_help_lists_every_benchmark() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    listed = [
        line.split()[0]
        for line in result.stdout.splitlines()
        if line[:4] == "    " and line[4:5].isalpha()
    ]
    assert listed == ["insert", "sequences", "generate", "snowflake", "hotspots", "report", "scale"]


@pytest.mark.parametrize(
    "name", [m.name for m in pkgutil.iter_modules(benchmarks.__path__, "benchmarks.")]
)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_generate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    png = tmp_path / "generate.png"
    assert main(["generate", "--seconds", "0.02", "--rounds", "1", "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert png.read_bytes()[:8] == PNG_SIGNATURE
    rows = {line.split()[0]: line for line in out.splitlines()[2:] if line[:1].isalpha()}
    for name in ("uuid.uuid4", "new_comb(AS_STRING)", "new_uuid7", "Snowflake"):
        assert name in rows
    assert rows["uuid.uuid4"].split()[2] == "1.00x"
    assert "new_comb(AS_STRING) runs at" in out


@pytest.mark.backend
def test_insert(engine: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = engine.url.render_as_string(hide_password=False)
    png = tmp_path / "insert.png"
    args = ["insert", "--url", url, "--rows", "2000", "--batch", "500", "--settle", "0"]
    assert main([*args, "--variants", "bigint,uuid4,comb", "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == PNG_SIGNATURE
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines() if line[:1].isalpha()}
    assert "1.00x" in lines["bigint"]
    assert {"uuid4", "comb"} <= lines.keys()
    assert "comb / bigint =" in out


def test_insert_rejects_unknown_variants(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["insert", "--url", "sqlite://", "--variants", "bigint,nope"]) == 2
    assert "unknown variant(s) nope" in capsys.readouterr().err


@pytest.mark.backend
def test_sequences_prints_the_guide_tools_lines(
    engine: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    url = engine.url.render_as_string(hide_password=False)
    for mode in sequences.ALL_MODES:
        args = ["sequences", "--url", url, "--mode", mode, "--iterations", "20"]
        args += ["--threads", "2", "--txn-ms", "1", "--batch-size", "10", "--low-watermark", "3"]
        assert main(args) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[0].startswith("20 iterations (2 parallel threads) in ")
        assert out[0].endswith(" values/s")
        assert [line.split("%ile")[0] for line in out[1:]] == [
            "Latency: 50",
            "Latency: 75",
            "Latency: 90",
            "Latency: 99",
        ]


@pytest.mark.backend
def test_sequences_modes_take_unique_keys(engine: Engine) -> None:
    """Every mode that takes a key hands each iteration its own, across threads and blocks."""
    names = sequences.Names.prefixed("seqkeys_test_grid")
    try:
        for mode in ("native", "batch", "async_batch", "pooled"):
            bench = sequences.bench_engine(engine.url.render_as_string(hide_password=False), 4)
            try:
                result = sequences.run_mode(
                    bench, mode, iterations=60, threads=4, txn_ms=0, batch_size=7,
                    low_watermark=2, names=names,
                )  # fmt: skip
            finally:
                bench.dispose()
            assert result.iterations == 60
            assert len(result.values) == 60
            assert all(isinstance(v, int) for v in result.values), mode
            assert len(set(result.values)) == 60, mode
            if mode == "pooled":
                # blocks of 7 from one sequence: 60 keys fill 9 of them, and each of the
                # other 3 threads may have taken one more when they ran out at once
                keys = [int(str(v)) for v in result.values]
                assert min(keys) == 1
                assert len({(k - 1) // 7 for k in keys}) <= 9 + 3
    finally:
        sequences.drop_objects(engine, names)


def test_sequences_grid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'grid.db'}"
    png = tmp_path / "grid.png"
    args = ["sequences", "--grid", "--url", url, "--iterations", "20", "--txn-ms", "1"]
    assert main([*args, "--grid-threads", "2", "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == PNG_SIGNATURE
    out = capsys.readouterr().out.splitlines()
    header = out.index(next(line for line in out if line.startswith("mode")))
    table = out[header + 2 : header + 2 + len(sequences.ALL_MODES)]
    rows = {line.split()[0]: line for line in table}
    assert set(rows) == set(sequences.ALL_MODES)
    assert rows["none"].split()[3] == "1.00x"  # the ceiling against itself
    assert rows["sync"].split()[-1] == "-"  # the guide published no 2-thread row


def test_snowflake(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snowflake", "--seconds", "0.02", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert "reference nextId (transcribed)  1" in out
    assert "Snowflake from 4 thread(s):" in out
    assert "Snowflake from 1 thread: " in out  # the 2.5 million ids/s target
    for part in ("Python call", "clock read", "tick check and counter", "waiting at the cap"):
        assert f"\n{part} " in out  # where an id's time goes


def test_snowflake_breakdown_parts_add_up_to_an_id() -> None:
    from benchmarks.snowflake import breakdown

    parts = breakdown(rounds=1, calls=2_000)
    whole = parts.pop("id")
    assert whole > 0
    assert sum(parts.values()) == pytest.approx(whole) or parts["waiting at the cap"] == 0.0


def test_a_terminated_benchmark_drops_its_database() -> None:
    """``kill`` (SIGTERM) ends a run as an exception: the database of its own is dropped."""
    import signal
    import time

    import sqlalchemy as sa

    from tests.conftest import PG_URL

    admin = sa.create_engine(sa.make_url(PG_URL).set(database="postgres"))
    query = sa.text("SELECT datname FROM pg_database WHERE datname LIKE 'seqkeys_bench_%'")
    try:
        with admin.connect() as conn:
            before = set(conn.scalars(query))
    except sa.exc.OperationalError:
        pytest.skip("no PostgreSQL server here")
    run = subprocess.Popen(
        [sys.executable, "-m", "benchmarks", "sequences", "--url", PG_URL, "--mode", "sync",
         "--iterations", "1000000", "--threads", "1", "--txn-ms", "1"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        ours: set[str] = set()
        while not ours and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.2)
            with admin.connect() as conn:
                ours = set(conn.scalars(query)) - before
        assert ours, "the benchmark never created its database"
        time.sleep(1)  # well inside the run
        run.send_signal(signal.SIGTERM)
        assert run.wait(60) == 128 + signal.SIGTERM
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    with admin.connect() as conn:
        assert not ours & set(conn.scalars(query))
    admin.dispose()
