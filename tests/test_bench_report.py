"""``python -m benchmarks report --quick``: BENCHMARKS.md with every section and its plots.

It runs against this run's own databases on the shared servers (tests/conftest.py).
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest

from benchmarks.__main__ import main
from benchmarks._progress import Progress
from benchmarks.report import SECTIONS
from tests.test_markdown_paths import machine_paths

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _server_urls(engines: Any) -> dict[str, str]:
    """PostgreSQL and MariaDB, in this run's own databases (skipped, or failed with ``CI``)."""
    return {
        key: engines.get(key).url.render_as_string(hide_password=False)
        for key in ("postgresql", "mysql")
    }


def test_quick_report_writes_every_section_and_its_plots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], engines: Any
) -> None:
    servers = _server_urls(engines)
    out = tmp_path / "report"
    argv = ["report", "--quick", "--out", str(out), "--spanner", "none"]
    for key, url in servers.items():
        argv += [f"--{key}", url]
    assert main(argv) == 0
    captured = capsys.readouterr()
    report = out / "BENCHMARKS.md"
    assert captured.out.strip() == str(report)
    assert "] [2/" in captured.err  # progress lines went to stderr
    text = report.read_text()

    positions = [text.find(f"\n{heading}\n") for heading in SECTIONS]
    assert all(p > 0 for p in positions), [
        h for h, p in zip(SECTIONS, positions, strict=True) if p < 0
    ]
    assert positions == sorted(positions)
    assert "failed" not in text.split(SECTIONS[-1])[1]

    # the machine, and every engine that ran, with its tables
    assert "| CPU |" in text
    assert "| SQLAlchemy |" in text
    engines = ["SQLite"] + [
        {"postgresql": "PostgreSQL", "mysql": "Maria|MySQL"}[k] for k in servers
    ]
    for label in engines:
        assert re.search(rf"^### ({label})", text, re.MULTILINE), label
    assert text.count("| `none` | 10 |") == len(engines)  # the ceiling row per engine
    assert text.count("| bit-reversed | `") == len(engines)  # the insert table per engine
    for variant in ("bigint", "uuid4", "comb", "uuid7", "snowflake"):
        assert f"| {variant} | `" in text
    assert "| `uuid.uuid4` |" in text
    assert "| `Snowflake` |" in text
    assert "| monotonic |" in text
    assert "Spanner emulator: skipped" in text

    # the command that wrote it, and the documents it compares with, by name
    shown = out.relative_to(Path.cwd()) if out.is_relative_to(Path.cwd()) else out.name
    assert f"Written by `python -m benchmarks report --quick --out {shown} " in text
    assert machine_paths(text) == []  # a temporary --out or SQLite file, by name only
    assert "Spanner's sequence-generation guide" in text
    assert "COMB GUID article" in text
    assert "TiDB snowflake-id article" in text
    assert "source" not in text
    assert "BRIEF" not in text

    # the plots exist, are PNGs and the links resolve from BENCHMARKS.md
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert {Path(link).name for link in links} == {
        "sequences.png",
        "insert.png",
        "generate.png",
        "hotspots.png",
    }
    for link in links:
        assert link.startswith("docs/bench/")
        png = report.parent / link
        assert png.read_bytes()[:8] == PNG_SIGNATURE, link


def test_progress_prints_each_tenth_once_to_a_log() -> None:
    stream = io.StringIO()
    progress = Progress(steps=2, stream=stream)
    progress.stage("inserts")
    for done in range(0, 1001, 50):
        progress.bar("uuid4", done, 1000)
    lines = stream.getvalue().splitlines()
    assert "[1/2] inserts" in lines[0]
    assert len(lines) == 1 + 11  # 0%, 10%, ..., 100%
    assert lines[-1].endswith("100% 1,000/1,000")
    assert "[####################]" in lines[-1]
