"""The ``seqkeys`` command: the demo and the benchmarks run and print what they promise."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import reverse_bits
from sqlalchemy_seqkeys.cli import main


def test_demo_on_an_embedded_sqlite_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "demo.db"
    assert main(["demo", "--url", f"sqlite:///{db}"]) == 0
    out = capsys.readouterr().out
    assert db.exists()
    for title in ("COMB GUID (comb_guid, CombGuid())", "CombGuid(binary=True)", "UUIDv7"):
        assert title in out
    keys = [line.split()[0] for line in out.splitlines() if line.startswith("  ")]
    guids = [uuid.UUID(k) for k in keys if "-" in k]
    numbers = [int(k) for k in keys if "-" not in k]
    assert len(guids) == 12
    assert numbers[9:] == [1, 2, 3] * 4  # four TableSequence modes, three rows each
    assert all(n > 2**50 for n in numbers[:6])  # plain and rotated snowflake ids
    assert numbers[6:9] == sorted(reverse_bits(c) for c in (1, 2, 3))  # bit-reversed
    assert "minted at 20" in out


def test_python_dash_m(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "sqlalchemy_seqkeys", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0
    assert "demo" in result.stdout
    assert "bench" in result.stdout


def test_bench_comb_generate(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "comb-generate", "--seconds", "0.02", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    for name in ("uuid.uuid4", "new_comb(AS_STRING)", "new_uuid7"):
        assert name in out
    assert "vs uuid.uuid4" in out
    assert "1.00x" in out


@pytest.mark.backend
def test_bench_insert(engine: Engine, capsys: pytest.CaptureFixture[str]) -> None:
    url = engine.url.render_as_string(hide_password=False)
    assert (
        main(
            [
                "bench",
                "insert",
                "--url",
                url,
                "--rows",
                "2000",
                "--batch",
                "500",
                "--variants",
                "bigint,uuid4,comb",
                "--settle",
                "0",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines() if line[:1].isalpha()}
    assert "1.00x" in lines["bigint"]
    assert "comb / bigint =" in out


def test_bench_insert_rejects_unknown_variants(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "insert", "--url", "sqlite://", "--variants", "bigint,nope"]) == 2
    assert "unknown variant(s) nope" in capsys.readouterr().err


@pytest.mark.backend
def test_bench_sequences_prints_the_source_lines(
    engine: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    url = engine.url.render_as_string(hide_password=False)
    for mode in ("none", "native", "sync", "async", "batch", "async_batch"):
        args = [
            "bench",
            "sequences",
            "--url",
            url,
            "--mode",
            mode,
            "--iterations",
            "20",
            "--threads",
            "2",
            "--txn-ms",
            "1",
            "--batch-size",
            "10",
            "--low-watermark",
            "3",
        ]
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


def test_bench_sequences_grid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'grid.db'}"
    from sqlalchemy_seqkeys.bench import sequences

    report = sequences.grid(url, iterations=20, txn_ms=1, thread_counts=(2,))
    rows = {line.split()[0]: line for line in report.splitlines()[3:]}
    assert set(rows) == {"none", "native", "sync", "async", "batch", "async_batch"}
    assert "1.00x" in rows["none"]
    assert rows["sync"].split()[-1] == "-"  # the source published no 2-thread row


def test_bench_snowflake(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "snowflake", "--seconds", "0.02", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert "reference nextId (transcribed)  1" in out
    assert "Snowflake from 4 thread(s):" in out
