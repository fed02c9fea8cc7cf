"""The documentation site builds strictly, every example in it runs, and it names what it cites.

- ``mkdocs build --strict`` succeeds (the ``docs`` extra), and the API reference
  has an entry for every name in ``sqlalchemy_seqkeys.__all__``.
- Every ```python block of a page in ``docs/`` runs, in page order, in one
  namespace per page, on SQLite, with a fresh temporary directory as the working
  directory. As in ``tests/test_readme.py``: an expression statement whose
  comment starts with a Python literal states its value, and the test checks it
  (``reverse_bits(1)  # 4611686018427387904``); a block that defines
  ``upgrade()`` is a migration, run in an Alembic ``Operations`` context (then
  its ``downgrade()``), and a block that uses ``op`` at its top level runs its
  statements there, on the page's ``engine`` when it has one; after each block,
  the page's ``Base.metadata`` is created and dropped on a scratch database.
- An HTML comment on the line just before a fence marks a block:
  ``<!-- not-run: REASON -->`` (not run; counted, so such blocks stay few),
  ``<!-- file: NAME -->`` (the python block is also written to NAME in the
  working directory, for the commands that import it) and ``<!-- run -->`` (the
  sh block runs there, with this environment's scripts on ``PATH``).
- Every ``seqkeys ...`` command in an sh block parses, and a ``seqkeys ...`` in
  the prose names existing subcommands.
- No page cites a file outside the repository, links outside ``docs/``, or says
  "the source" without naming what it is; the built site (with the reference
  generated from the docstrings) neither.
- The "Which key for which engine" table of ``docs/choosing.md`` is the README's.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import gc
import html
import importlib.util
import os
import re
import subprocess
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.orm import DeclarativeBase, configure_mappers

import sqlalchemy_seqkeys
from sqlalchemy_seqkeys import WorkerLease, errors

from ._examples import (
    check_parses,
    check_subcommands,
    commands_in,
    comments_by_line,
    sqlite_only,
    stated_value,
    uses_op,
)
from ._markdown import ROOT, Block, code_blocks

DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "_ext" not in p.parts)

MAX_NOT_RUN = 3  # examples that cannot run on SQLite; keep them few

BLOCKS = {page: code_blocks(page) for page in PAGES}
ALL_BLOCKS = [b for blocks in BLOCKS.values() for b in blocks]


def _rel(page: Path) -> str:
    return str(page.relative_to(ROOT))


# -- the site builds --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once with ``mkdocs build --strict``."""
    if importlib.util.find_spec("mkdocs") is None:
        pytest.fail("mkdocs is not installed; install the docs extra: pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stderr}"
    return out


def test_mkdocs_build_strict(site: Path) -> None:
    assert (site / "index.html").exists()
    for page in PAGES:
        rel = page.relative_to(DOCS).with_suffix("")
        built = site / (rel.parent if rel.name == "index" else rel) / "index.html"
        assert built.exists(), f"{_rel(page)} was not built (is it in mkdocs.yml's nav?)"


def test_the_reference_documents_every_public_name(site: Path) -> None:
    text = "".join(p.read_text(encoding="utf-8") for p in (site / "reference").rglob("*.html"))
    missing = [
        name
        for name in sqlalchemy_seqkeys.__all__
        if name != "__version__" and f'id="sqlalchemy_seqkeys.{name}"' not in text
    ]
    assert not missing, (
        f"the API reference lacks {missing}: add `::: sqlalchemy_seqkeys.NAME` to a page in "
        "docs/reference/"
    )


def test_the_griffe_extension_shows_sphinx_roles_as_markdown() -> None:
    spec = importlib.util.spec_from_file_location("griffe_sphinx", DOCS / "_ext/griffe_sphinx.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = "See :class:`~sqlalchemy_seqkeys.WorkerLease` and :func:`reverse_bits`.\n\nExample::"
    assert module.markdown_of(text) == "See `WorkerLease` and `reverse_bits`.\n\nExample:"


def test_the_reference_shows_async_lease_attributes_as_properties(site: Path) -> None:
    # AsyncWorkerLease.worker_id & co. are one descriptor (workers._FromSyncLease); the
    # reference shows each as the typed read-only property it behaves as
    page = (site / "reference" / "snowflake" / "index.html").read_text(encoding="utf-8")
    assert "_FromSyncLease" not in page
    for name in ("worker_id", "valid", "floor_ms", "mark_ms", "closed"):
        anchor = f'id="sqlalchemy_seqkeys.AsyncWorkerLease.{name}"'
        assert anchor in page, name
        heading = page[page.index(anchor) :][:2000]
        assert "property" in heading, (name, heading)


# -- the examples run -------------------------------------------------------------------------


def test_the_docs_have_examples_and_few_are_not_run() -> None:
    python = [b for b in ALL_BLOCKS if b.lang == "python"]
    assert len(python) >= 20
    not_run = [b.where for b in ALL_BLOCKS if b.marker == "not-run"]
    assert len(not_run) <= MAX_NOT_RUN, f"too many examples are not run: {not_run}"
    no_reason = [b.where for b in ALL_BLOCKS if b.marker == "not-run" and not b.arg]
    assert not no_reason, f"a not-run marker needs its reason: {no_reason}"
    misplaced = [
        b.where
        for b in ALL_BLOCKS
        if (b.marker == "run" and b.lang != "sh")
        or (b.marker == "file" and (b.lang != "python" or not b.arg))
    ]
    assert not misplaced, (
        f"<!-- run --> goes before sh, <!-- file: NAME --> before python: {misplaced}"
    )


def _check_stated(page: Path, actual: object, expected: object, line: int) -> None:
    assert actual == expected, f"{_rel(page)}:{line}: the comment says {expected!r}, got {actual!r}"


class _StatedValues(ast.NodeTransformer):
    """Each expression statement whose comment states a value, at any depth, becomes a check."""

    CHECK = "__docs_check_stated__"

    def __init__(self, comments: dict[int, str]) -> None:
        self.comments = comments

    def visit_Expr(self, node: ast.Expr) -> ast.Expr:
        states, expected = stated_value(self.comments.get(node.end_lineno or 0, ""))
        if not states:
            return node
        check = ast.Call(
            func=ast.Name(self.CHECK, ast.Load()),
            args=[node.value, ast.Constant(expected), ast.Constant(node.lineno)],
            keywords=[],
        )
        return ast.copy_location(ast.Expr(check), node)


class _PageRunner:
    """Runs one page's blocks in order: one namespace, one working directory."""

    def __init__(self, page: Path, workdir: Path) -> None:
        self.page = page
        self.workdir = workdir
        self.namespace: dict[str, Any] = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
        self.scratch = sa.create_engine(f"sqlite:///{workdir / 'scratch.db'}")
        self.engines: list[sa.Engine] = [self.scratch]

    def run(self, block: Block) -> None:
        if block.marker == "file":
            (self.workdir / str(block.arg)).write_text(block.code, encoding="utf-8")
        if block.lang == "python":
            self._python(block)
        elif block.lang == "sh" and block.marker == "run":
            self._sh(block)

    def _engine(self) -> sa.Engine:
        engine = self.namespace.get("engine")
        return engine if isinstance(engine, sa.Engine) else self.scratch

    @contextlib.contextmanager
    def _operations(self) -> Iterator[Operations]:
        with self._engine().begin() as conn:
            context = MigrationContext.configure(conn, opts={"render_as_batch": True})
            with Operations.context(context) as op:
                yield op

    def _python(self, block: Block) -> None:
        tree = ast.parse(block.code)
        ast.increment_lineno(tree, block.line - 1)
        comments = comments_by_line("\n" * (block.line - 1) + block.code)
        tree = ast.fix_missing_locations(_StatedValues(comments).visit(tree))
        self.namespace[_StatedValues.CHECK] = functools.partial(_check_stated, block.page)
        before = dict(self.namespace)
        with contextlib.ExitStack() as stack:
            if uses_op(tree):  # a migration fragment: ``op`` for its statements
                op = stack.enter_context(self._operations())
                stack.enter_context(pytest.MonkeyPatch.context()).setitem(self.namespace, "op", op)
            exec(compile(tree, str(block.page), "exec", dont_inherit=True), self.namespace)
        for step in ("upgrade", "downgrade"):
            function = self.namespace.get(step)
            if function is not None and function is not before.get(step):
                with self._operations():
                    function()
        self._create_all()

    def _create_all(self) -> None:
        base = self.namespace.get("Base")
        if isinstance(base, type) and issubclass(base, DeclarativeBase) and base.metadata.tables:
            configure_mappers()
            base.metadata.create_all(self.scratch)
            base.metadata.drop_all(self.scratch)

    def _sh(self, block: Block) -> None:
        env = {k: v for k, v in os.environ.items() if k != "SEQKEYS_DATABASE_URL"}
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        result = subprocess.run(
            ["bash", "-e", "-c", block.code],
            cwd=self.workdir,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        assert result.returncode == 0, (
            f"the commands exit with {result.returncode}:\n{result.stdout}\n{result.stderr}"
        )

    def close(self) -> None:
        values = list(self.namespace.values())
        for engine in [*self.engines, *(v for v in values if isinstance(v, sa.Engine))]:
            engine.dispose()


@contextlib.contextmanager
def _leases_closed() -> Iterator[None]:
    """Closes every WorkerLease the examples opened (their renewal threads stop)."""
    before = {id(o) for o in gc.get_objects() if isinstance(o, WorkerLease)}
    try:
        yield
    finally:
        for lease in [o for o in gc.get_objects() if isinstance(o, WorkerLease)]:
            if id(lease) not in before:
                lease.close()


@pytest.mark.parametrize(
    "page", [p for p in PAGES if any(b.lang == "python" for b in BLOCKS[p])], ids=_rel
)
def test_page_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's examples, in order, as a reader would run them."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sa, "create_engine", sqlite_only(sa.create_engine))
    runner = _PageRunner(page, tmp_path)
    with _leases_closed():
        try:
            for block in BLOCKS[page]:
                if block.marker == "not-run":
                    continue
                try:
                    runner.run(block)
                except Exception:
                    pytest.fail(
                        f"the example at {block.where} fails:\n{traceback.format_exc()}",
                        pytrace=False,
                    )
        finally:
            runner.close()


# -- the seqkeys commands ---------------------------------------------------------------------

SH_BLOCKS = [b for b in ALL_BLOCKS if b.lang == "sh"]


@pytest.mark.parametrize("block", SH_BLOCKS, ids=lambda b: b.where)
def test_sh_block_seqkeys_commands_parse(block: Block) -> None:
    for line in block.code.replace("\\\n", " ").splitlines():
        for args in commands_in(line.split(" #", 1)[0]):
            check_parses(args, block.where)


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_seqkeys_commands_in_the_prose_exist(page: Path) -> None:
    for span in re.findall(r"`(seqkeys [^`]+)`", page.read_text(encoding="utf-8")):
        for args in commands_in(span):
            check_subcommands(args)


# -- what the pages cite ----------------------------------------------------------------------

#: files of the project's workspace that are not in the repository
OUTSIDE = re.compile(
    r"\.\./shared|/work/|\bseeds/|\bBRIEF\b|\bDESIGN\.md|\bSTYLE\.md|\bPREAMBLE", re.IGNORECASE
)
#: the source material named by a pronoun instead of by what it is
UNNAMED = re.compile(
    r"\b(?:the|its|their|our) sources?\b(?! code)|\bsource (?:documents?|materials?|articles?)\b",
    re.IGNORECASE,
)
LINK = re.compile(r"\]\((?P<target>[^)\s]+)")


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_page_cites_nothing_outside_the_repository(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    found = [m.group(0) for m in OUTSIDE.finditer(text)]
    assert not found, f"{_rel(page)} names files outside the repository: {found}"
    for link in LINK.finditer(text):
        target = link["target"].split("#", 1)[0]
        if not target or re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue
        resolved = (page.parent / target).resolve()
        assert resolved.is_relative_to(DOCS.resolve()), (
            f"{_rel(page)} links to {link['target']}, outside docs/: the site cannot serve it"
        )


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_page_names_its_sources(page: Path) -> None:
    lines = page.read_text(encoding="utf-8").splitlines()
    found = [
        f"{_rel(page)}:{n}: {line.strip()}"
        for n, line in enumerate(lines, 1)
        if UNNAMED.search(line)
    ]
    assert not found, (
        "say what the source material is (Spanner's sequence-generation guide, Spanner's schema "
        "design best practices, the TiDB snowflake-id article, the COMB GUID article):\n"
        + "\n".join(found)
    )


def test_the_built_site_names_its_sources(site: Path) -> None:
    """The reference generated from the docstrings too."""
    found = []
    for built in sorted(site.rglob("*.html")):
        text = html.unescape(re.sub(r"<[^>]+>", "", built.read_text(encoding="utf-8")))
        found += [
            f"{built.relative_to(site)}: ...{text[max(0, m.start() - 60) : m.end() + 20]}..."
            for m in UNNAMED.finditer(text)
        ]
        found += [f"{built.relative_to(site)}: {m.group(0)}" for m in OUTSIDE.finditer(text)]
    assert not found, "the built site says 'the source' or cites outside files:\n" + "\n".join(
        found
    )


def _table_under(path: Path, heading: str) -> list[str]:
    """The rows of the first Markdown table after ``heading``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next((i for i, line in enumerate(lines) if line.lstrip("# ").strip() == heading), None)
    assert start is not None, f"{_rel(path)} has no heading {heading!r}"
    first = next(i for i, line in enumerate(lines[start + 1 :], start + 1) if line.startswith("|"))
    end = next((i for i in range(first, len(lines)) if not lines[i].startswith("|")), len(lines))
    rows = lines[first:end]
    assert rows, f"{_rel(path)}: no table under {heading!r}"
    return rows


def test_choosing_agrees_with_the_readme() -> None:
    """One story: the README's "which key for which engine" table is the docs' table."""
    heading = "Which key for which engine"
    assert _table_under(DOCS / "choosing.md", heading) == _table_under(ROOT / "README.md", heading)


def test_the_error_reference_lists_every_error() -> None:
    # docs/reference/errors.md: a row saying when each is raised, and its reference entry
    page = (DOCS / "reference" / "errors.md").read_text(encoding="utf-8")
    table, _, reference = page.partition("## Reference")
    missing = [
        name
        for name in errors.__all__
        if f"| `{name}` |" not in table or f"::: sqlalchemy_seqkeys.{name}\n" not in reference
    ]
    assert not missing, f"docs/reference/errors.md does not list {missing}"
