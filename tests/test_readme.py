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

import ast
import contextlib
import re
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.orm import configure_mappers

from sqlalchemy_seqkeys import WorkerLease

from ._examples import (
    check_parses,
    check_subcommands,
    commands_in,
    comments_by_line,
    sqlite_only,
    stated_value,
    uses_op,
)
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
        if any(stated_value(c)[0] for c in comments_by_line(b.code).values())
    ]
    assert stated, "the README's example states a value (`x  # 1000`) that the test checks"
    not_run = [_id(b) for b in PYTHON_BLOCKS if b.not_run]
    assert len(not_run) <= 2, f"too many README examples are not run: {not_run}"
    empty = [_id(b) for b in PYTHON_BLOCKS if b.not_run == ""]
    assert not empty, f"a not-run marker needs its reason: {empty}"


# -- running the python blocks --------------------------------------------------------------


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
        comments = comments_by_line("\n" * (block.line - 1) + block.code)
        before = dict(self.namespace)
        with contextlib.ExitStack() as stack:
            if uses_op(tree):
                # a migration fragment: ``op`` for its statements, then the name as it was
                stack.enter_context(pytest.MonkeyPatch.context()).setitem(
                    self.namespace, "op", stack.enter_context(self._operations())
                )
            for stmt in tree.body:
                states, expected = stated_value(comments.get(stmt.end_lineno or 0, ""))
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


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[int, str | None]:
    """Runs every python block once, in order: README line -> the failure, or None."""
    workdir = tmp_path_factory.mktemp("readme")
    results: dict[int, str | None] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workdir)
        mp.setattr(sa, "create_engine", sqlite_only(sa.create_engine))
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


def test_sh_blocks_name_seqkeys_commands() -> None:
    commands = [args for block in SH_BLOCKS for args in commands_in(block.code)]
    assert len(commands) >= 2
    assert ["demo"] in commands


@pytest.mark.parametrize("block", SH_BLOCKS, ids=_id)
def test_sh_block_seqkeys_commands_parse(block: Block) -> None:
    """Subcommands and options: the command line parses as the README writes it."""
    for line in block.code.replace("\\\n", " ").splitlines():
        for args in commands_in(line):
            check_parses(args, f"README.md:{block.line}")


def test_seqkeys_commands_in_the_prose_exist() -> None:
    text = README.read_text(encoding="utf-8")
    spans = re.findall(r"`(seqkeys [^`]+)`", text)
    assert len(spans) >= 3
    for span in spans:
        for args in commands_in(span):
            check_subcommands(args)
