"""No Markdown file of the repository names a path of one machine, and no report writes one.

A reader runs the commands a page or a report shows on their own machine: a path
that existed only where the report was made (a temporary directory, a home, a
work area) cannot be reproduced there and tells nothing. What counts:

- an absolute POSIX path under a machine's own directories (``/tmp``, ``/var``,
  ``/home``, ``/root``, ``/Users``, ``/work``, ``/opt``, ``/srv``, ``/mnt``,
  ``/media``, ``/private``, ``/run``, ``/usr``, ``/etc``, ``/nix``, ``/snap``,
  ``/proc``, ``/dev``, ``/sys``, ``/lib``, ``/bin``, ``/sbin``), alone or inside a
  command, a URL query or a code span;
- a ``file://`` URL, a SQLite URL to an absolute file (``sqlite:////...``: four
  slashes), a Windows drive path (``C:\\...``).

Allowed, because they are the same on every POSIX machine and name nobody's
files: ``/dev/null``, ``/dev/stdout``, ``/dev/stderr``, ``/dev/urandom``,
``/proc/self/...`` and a ``#!/usr/bin/env`` line. Paths relative to the checkout
and ``~/...`` (anyone's home) are fine, as are URL paths (``https://host/home/``,
``postgresql://...:5432/test``): what precedes the slash is not a separator there.

The report generators (``python -m benchmarks report`` and ``scale``) write their
command lines and server URLs through ``benchmarks._engines.portable_word`` and
``masked``: an absolute ``--out`` becomes relative (or its file name), a SQLite
file its name. ``tests/test_bench_report.py`` checks a whole quick report.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks import scale
from benchmarks._engines import masked, portable_word

ROOT = Path(__file__).resolve().parent.parent
#: directories that are not the repository's own text (environments, caches, builds)
SKIPPED = {".git", ".venv", ".nox", "site", "node_modules", "build", "dist", ".tox"}
MACHINE_DIRS = (
    "tmp|var|home|root|Users|work|opt|srv|mnt|media|private|run|usr|etc|nix|snap"
    "|proc|dev|sys|lib|bin|sbin"
)
MACHINE_PATH = re.compile(
    # not after a word character, a dot, a tilde, a slash or a dash: then it is part of
    # a relative path, a home path or a URL's path
    rf"(?<![\w.~/\\-])/(?:{MACHINE_DIRS})(?:/[^\s`'\")\]>|,;]*)?(?![\w.-])"
    r"|\bfile://[^\s`'\")\]>]*"
    r"|\bsqlite(?:\+\w+)?:////[^\s`'\")\]>]*"
    r"|(?<![\w/])[A-Za-z]:\\[^\s`'\")\]>]*"
)
ALLOWED = re.compile(r"/dev/(?:null|stdout|stderr|urandom)$|/proc/self(?:/|$)")
SHEBANG = re.compile(r"^#!/usr/bin/env\b")


def machine_paths(text: str) -> list[str]:
    """The paths of one machine that ``text`` names (see the module docstring)."""
    found = []
    for line in text.splitlines():
        if SHEBANG.match(line):
            continue
        found += [m.group(0) for m in MACHINE_PATH.finditer(line) if not ALLOWED.match(m.group(0))]
    return found


def markdown_files() -> list[Path]:
    return sorted(
        p
        for p in ROOT.rglob("*.md")
        if not SKIPPED.intersection(p.relative_to(ROOT).parts[:-1])
        and not any(part.endswith(".egg-info") for part in p.parts)
    )


def test_the_repository_has_its_markdown_files() -> None:
    names = {str(p.relative_to(ROOT)) for p in markdown_files()}
    assert {"README.md", "BENCHMARKS.md", "CHANGELOG.md", "docs/benchmarks.md"} <= names


@pytest.mark.parametrize("page", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_markdown_file_names_a_machine_path(page: Path) -> None:
    found = machine_paths(page.read_text(encoding="utf-8"))
    assert not found, (
        f"{page.relative_to(ROOT)} names paths of one machine (write a path relative to the "
        f"checkout, or leave the path out): {found}"
    )


@pytest.mark.parametrize(
    "text",
    [
        # what BENCHMARKS.md said before: a temporary directory, a work area
        "| servers | SQLite 3.40.1 (`sqlite:////tmp/seqkeys-report-qf3o_548/seqkeys-report.db`)",
        "`python -m benchmarks scale --rows 10000000 --out /work/notes/scale10m.md`, 41 minutes",
        "the data in /home/ada/db and /root/.cache/pip",
        "`--out=/Users/ada/report`",
        "see file:///srv/report.html",
        "a plot at C:\\Users\\ada\\plot.png",
        "TMPDIR=/tmp python -m benchmarks scale",
        "written to /var/lib/mysql.",
    ],
)
def test_machine_paths_are_found(text: str) -> None:
    assert machine_paths(text), text


@pytest.mark.parametrize(
    "text",
    [
        "`python -m benchmarks report --out report --quick`",
        "`sqlite:///seqkeys-report.db`, `sqlite:///shop.db`",
        "`postgresql+psycopg://postgres@127.0.0.1:5432/test`, `mysql+pymysql://root@127.0.0.1/test`",
        "[the page](docs/strategies/pooled.md), ![plot](docs/bench/insert.png)",
        "https://example.com/home/index.html and https://docs.python.org/3/library/tmp",
        "`cmd > /dev/null 2>&1`, `/dev/urandom`, `/proc/self/status`",
        "#!/usr/bin/env bash",
        "`~/.pyenv/versions` and `tests/unit/test_version.py`",
        "ratio 1.03x/1.10x, a/b/c and 10/s",
    ],
)
def test_portable_text_passes(text: str) -> None:
    assert machine_paths(text) == [], text


def test_report_words_are_portable(tmp_path: Path) -> None:
    cwd = tmp_path / "checkout"
    assert portable_word(str(cwd / "notes" / "x.md"), cwd=cwd) == "notes/x.md"
    assert portable_word("/elsewhere/out/x.md", cwd=cwd) == "x.md"
    assert portable_word(f"--out={tmp_path}/r", cwd=cwd) == "--out=r"
    assert portable_word("--rows", cwd=cwd) == "--rows"
    assert portable_word("identity,pooled", cwd=cwd) == "identity,pooled"
    assert masked("sqlite:////var/tmp/a/seqkeys-report.db") == "sqlite:///seqkeys-report.db"
    assert masked("postgresql://u:pw@h/db") == "postgresql://u:***@h/db"


def test_the_scale_report_prints_a_portable_command(tmp_path: Path) -> None:
    run = scale.ScaleRun(rows=1000, started="2026-11-25 11:17 UTC", minutes=1.0)
    out = tmp_path / "notes" / "scale.md"
    text = scale.render_markdown(run, ["scale", "--rows", "1000", "--out", str(out)])
    inside = out.is_relative_to(Path.cwd())  # a TMPDIR inside the checkout: relative to it
    shown = out.relative_to(Path.cwd()) if inside else out.name
    assert f"`python -m benchmarks scale --rows 1000 --out {shown}`" in text
    assert machine_paths(text) == []
