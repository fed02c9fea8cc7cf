"""What the README and docs example tests share: values stated in comments, ``op`` fragments,
SQLite only, and the ``seqkeys`` command lines the pages show."""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import re
import shlex
import tokenize
from typing import Any

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import cli

#: what a comment can state
Stated = int | float | str | bytes | bool | None


def stated_value(comment: str) -> tuple[bool, Stated]:
    """``# 42: its own inverse`` -> (True, 42); a comment stating no literal -> (False, None)."""
    head = comment.lstrip("#").strip().split(":", 1)[0].strip()
    try:
        value = ast.literal_eval(head)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None
    if isinstance(value, (int, float, str, bytes, bool)):
        return True, value
    return False, None


def comments_by_line(code: str) -> dict[int, str]:
    """Line number -> the comment on that line."""
    tokens = tokenize.generate_tokens(io.StringIO(code).readline)
    return {t.start[0]: t.string for t in tokens if t.type == tokenize.COMMENT}


def uses_op(tree: ast.Module) -> bool:
    """Whether the block's own top level (not a function body) uses ``op``."""
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if any(isinstance(n, ast.Name) and n.id == "op" for n in ast.walk(stmt)):
            return True
    return False


def sqlite_only(create_engine: Any) -> Any:
    """``sa.create_engine`` that refuses a server: the examples run offline."""

    def create(url: str | sa.URL, **kw: Any) -> sa.Engine:
        if sa.make_url(url).get_backend_name() != "sqlite":
            raise AssertionError(f"README examples run on SQLite only, not {url!r}")
        return create_engine(url, **kw)  # type: ignore[no-any-return]

    return create


# -- the seqkeys commands ---------------------------------------------------------------------

COMMAND = re.compile(r"(?:^|[\s/(`])seqkeys((?:\s+[^\s;&|)#`]+)*)")


def commands_in(text: str) -> list[list[str]]:
    """The arguments of each ``seqkeys ...`` command in ``text``."""
    return [shlex.split(m[1]) for m in COMMAND.finditer(text)]


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def check_subcommands(args: list[str]) -> None:
    """Every subcommand the words name exists (options and their values are not checked)."""
    parser: argparse.ArgumentParser = cli.parser()
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


def check_parses(args: list[str], where: str) -> None:
    """The command line names existing subcommands and parses, options included."""
    check_subcommands(args)
    output = io.StringIO()
    with contextlib.redirect_stderr(output), contextlib.redirect_stdout(output):
        try:
            cli.parser().parse_args(args)
        except SystemExit as exc:  # --help exits 0
            if exc.code not in (0, None):
                pytest.fail(
                    f"{where}: `seqkeys {shlex.join(args)}` does not parse:\n{output.getvalue()}"
                )
