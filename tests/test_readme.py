"""The README's examples run, and the ``seqkeys`` commands it shows exist.

Every ```python block of README.md runs, in README order, in one namespace
shared by all blocks (a block may use what an earlier one defined), on SQLite
files in a temporary directory (the working directory while they run). The
namespace starts with ``PREAMBLE``, the imports a reader has anyway; before
each block ``PER_BLOCK`` gives it a fresh ``Base``, so blocks that declare the
same table name do not collide. A block that defines ``upgrade()`` (an Alembic
migration script) has it called, and a block that uses ``op`` at the top level
gets it, through Alembic's ``Operations`` on a SQLite database kept for the
migration blocks. After each block its ``Base.metadata`` is created on a fresh
SQLite file, so the DDL the example declares is checked too.

An expression statement whose comment starts with a Python literal states its
value (``reverse_bits(reverse_bits(42))  # 42: its own inverse``): the test
checks it.

A block that cannot run here is marked by an HTML comment on the line just
before its fence, ``<!-- not-run: the reason -->``; it is reported as skipped
with that reason.

For ```sh blocks, every ``seqkeys ...`` command line must parse with the real
argument parser (subcommands and options); a ``seqkeys ...`` command in the
prose's code spans must name existing subcommands.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import re
import shlex
import tokenize
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.orm import configure_mappers

from sqlalchemy_seqkeys import WorkerLease, cli

from ._markdown import Block, code_blocks

README = Path(__file__).parent.parent / "README.md"

PREAMBLE = """\
import uuid
from datetime import date, datetime, timezone

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from sqlalchemy_seqkeys import *

engine = sa.create_engine("sqlite:///readme.db")
"""

PER_BLOCK = """\
class Base(DeclarativeBase):
    pass
"""


def _id(block: Block) -> str:
    suffix = f" not-run: {block.not_run}" if block.not_run else ""
    return f"README.md:{block.line}{suffix}"


PYTHON_BLOCKS = [b for b in code_blocks(README) if b.lang == "python"]
SH_BLOCKS = [b for b in code_blocks(README) if b.lang == "sh"]


def test_the_readme_has_examples_and_few_are_not_run() -> None:
    # a short front page: one complete example; the documentation has the rest (tests/test_docs.py)
    assert len(PYTHON_BLOCKS) >= 1
    assert len(SH_BLOCKS) >= 3
    stated = [
        _id(b)
        for b in PYTHON_BLOCKS
        if any(_stated_value(c)[0] for c in _comments(b.code).values())
    ]
    assert stated, "the README's example states a value (`x  # 1000`) that the test checks"
    not_run = [_id(b) for b in PYTHON_BLOCKS if b.not_run]
    assert len(not_run) <= 2, f"too many README examples are not run: {not_run}"
    empty = [_id(b) for b in PYTHON_BLOCKS if b.not_run == ""]
    assert not empty, f"a not-run marker needs its reason: {empty}"


# -- running the python blocks --------------------------------------------------------------


def _stated_value(comment: str) -> tuple[bool, object]:
    """``# 42: its own inverse`` -> (True, 42); a comment stating no literal -> (False, None)."""
    head = comment.lstrip("#").strip().split(":", 1)[0].strip()
    try:
        value = ast.literal_eval(head)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None
    if isinstance(value, (int, float, str, bytes, bool)):
        return True, value
    return False, None


def _comments(code: str) -> dict[int, str]:
    tokens = tokenize.generate_tokens(io.StringIO(code).readline)
    return {t.start[0]: t.string for t in tokens if t.type == tokenize.COMMENT}


def _uses_op(tree: ast.Module) -> bool:
    """Whether the block's own top level (not a function body) uses ``op``."""
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if any(isinstance(n, ast.Name) and n.id == "op" for n in ast.walk(stmt)):
            return True
    return False


class _Runner:
    """Runs the blocks in order; one namespace, one migration database."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.namespace: dict[str, Any] = {"__name__": "readme"}
        self.migrations = sa.create_engine(f"sqlite:///{workdir / 'migrations.db'}")
        self.engines: list[sa.Engine] = [self.migrations]
        self._exec(PREAMBLE, "<preamble>")

    def _exec(self, code: str | ast.Module, filename: str) -> None:
        exec(compile(code, filename, "exec", dont_inherit=True), self.namespace)

    @contextlib.contextmanager
    def _operations(self) -> Iterator[Operations]:
        with self.migrations.begin() as conn:
            context = MigrationContext.configure(conn, opts={"render_as_batch": True})
            with Operations.context(context) as op:
                yield op

    def run(self, block: Block) -> None:
        self._exec(PER_BLOCK, "<per-block preamble>")
        tree = ast.parse(block.code)
        ast.increment_lineno(tree, block.line - 1)
        comments = _comments("\n" * (block.line - 1) + block.code)
        before = dict(self.namespace)
        with contextlib.ExitStack() as stack:
            if _uses_op(tree):
                # a migration fragment: ``op`` for its statements, then the name as it was
                stack.enter_context(pytest.MonkeyPatch.context()).setitem(
                    self.namespace, "op", stack.enter_context(self._operations())
                )
            for stmt in tree.body:
                states, expected = _stated_value(comments.get(stmt.end_lineno or 0, ""))
                if isinstance(stmt, ast.Expr) and states:
                    code = compile(
                        ast.Expression(stmt.value), str(README), "eval", dont_inherit=True
                    )
                    actual = eval(code, self.namespace)
                    assert actual == expected, (
                        f"README.md:{stmt.lineno}: the comment says {expected!r}, got {actual!r}"
                    )
                else:
                    self._exec(ast.Module([stmt], type_ignores=[]), str(README))
        upgrade = self.namespace.get("upgrade")
        if upgrade is not None and upgrade is not before.get("upgrade"):
            with self._operations():
                upgrade()
        self._create_all()

    def _create_all(self) -> None:
        metadata = self.namespace["Base"].metadata
        if metadata.tables:
            configure_mappers()
            engine = sa.create_engine(f"sqlite:///{self.workdir / 'create_all.db'}")
            self.engines.append(engine)
            metadata.create_all(engine)
            metadata.drop_all(engine)

    def close(self) -> None:
        """Leases closed, engines disposed, even those of a block that failed half-way."""
        values = list(self.namespace.values())
        for lease in (v for v in values if isinstance(v, WorkerLease)):
            lease.close()
        for engine in [*self.engines, *(v for v in values if isinstance(v, sa.Engine))]:
            engine.dispose()


def _sqlite_only(create_engine: Any) -> Any:
    """``sa.create_engine`` that refuses a server: the README examples run offline."""

    def create(url: str | sa.URL, **kw: Any) -> sa.Engine:
        if sa.make_url(url).get_backend_name() != "sqlite":
            raise AssertionError(f"README examples run on SQLite only, not {url!r}")
        return create_engine(url, **kw)  # type: ignore[no-any-return]

    return create


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[int, str | None]:
    """Runs every python block once, in order: README line -> the failure, or None."""
    workdir = tmp_path_factory.mktemp("readme")
    results: dict[int, str | None] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workdir)
        mp.setattr(sa, "create_engine", _sqlite_only(sa.create_engine))
        runner = _Runner(workdir)
        try:
            for block in PYTHON_BLOCKS:
                if block.not_run:
                    continue
                try:
                    runner.run(block)
                except Exception:
                    results[block.line] = traceback.format_exc()
                else:
                    results[block.line] = None
        finally:
            runner.close()
    return results


@pytest.mark.parametrize(
    "block",
    [
        pytest.param(
            b,
            id=_id(b),
            marks=[pytest.mark.skip(reason=f"README.md:{b.line}: {b.not_run}")]
            if b.not_run
            else [],
        )
        for b in PYTHON_BLOCKS
    ],
)
def test_python_block_runs(block: Block, outcomes: dict[int, str | None]) -> None:
    failure = outcomes[block.line]
    if failure is not None:
        pytest.fail(
            f"the README example at README.md:{block.line} fails:\n{failure}", pytrace=False
        )


# -- the seqkeys commands ---------------------------------------------------------------------

COMMAND = re.compile(r"(?:^|[\s/(`])seqkeys((?:\s+[^\s;&|)#`]+)*)")


def _commands_in(text: str) -> list[list[str]]:
    return [shlex.split(m[1]) for m in COMMAND.finditer(text)]


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _check_subcommands(args: list[str]) -> None:
    """Every subcommand the words name exists (options and their values are not checked)."""
    parser: argparse.ArgumentParser = cli._parser()
    path = ["seqkeys"]
    words = iter(args)
    while choices := _subcommands(parser):
        word = next(words, None)
        if word is None or word.startswith("-"):
            return
        if word not in choices:
            pytest.fail(f"`{' '.join(path)} {word}`: no such command (one of {sorted(choices)})")
        path.append(word)
        parser = choices[word]


def test_sh_blocks_name_seqkeys_commands() -> None:
    commands = [args for block in SH_BLOCKS for args in _commands_in(block.code)]
    assert len(commands) >= 2
    assert ["demo"] in commands


@pytest.mark.parametrize("block", SH_BLOCKS, ids=_id)
def test_sh_block_seqkeys_commands_parse(block: Block) -> None:
    """Subcommands and options: the command line parses as the README writes it."""
    for line in block.code.replace("\\\n", " ").splitlines():
        for args in _commands_in(line):
            _check_subcommands(args)
            output = io.StringIO()
            with contextlib.redirect_stderr(output), contextlib.redirect_stdout(output):
                try:
                    cli._parser().parse_args(args)
                except SystemExit as exc:  # --help exits 0
                    if exc.code not in (0, None):
                        pytest.fail(
                            f"README.md:{block.line}: `seqkeys {shlex.join(args)}` does not "
                            f"parse:\n{output.getvalue()}"
                        )


def test_seqkeys_commands_in_the_prose_exist() -> None:
    text = README.read_text(encoding="utf-8")
    spans = re.findall(r"`(seqkeys [^`]+)`", text)
    assert len(spans) >= 3
    for span in spans:
        for args in _commands_in(span):
            _check_subcommands(args)
