"""Code blocks of a Markdown page and the marker above each: one parser for README and docs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parent.parent

FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")
MARKER = re.compile(r"^<!--\s*(?P<kind>not-run|file|run)\s*(?::\s*(?P<arg>.*?))?\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    page: Path
    lang: str
    line: int  # the page line of the block's first line of code
    code: str
    marker: str | None  # not-run, file or run
    arg: str | None  # the marker's reason or file name

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def not_run(self) -> str | None:
        """The reason ('' when none is given) if the block is marked not-run, else None."""
        return (self.arg or "") if self.marker == "not-run" else None


def code_blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page`` in order; a fence that is never closed fails the test."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
        assert end is not None, f"{page.relative_to(ROOT)}:{i + 1}: a code fence is never closed"
        marker = MARKER.match(lines[i - 1]) if i > 0 else None
        found.append(
            Block(
                page=page,
                lang=opening["lang"],
                line=i + 2,
                code="\n".join(lines[i + 1 : end]) + "\n",
                marker=marker["kind"] if marker else None,
                arg=marker["arg"] if marker else None,
            )
        )
        i = end + 1
    return found
