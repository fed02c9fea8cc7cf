"""MkDocs hook: the site's changelog and contributing pages are the repository's own files.

``docs/changelog.md`` and ``docs/contributing.md`` hold one line,
``<!-- include: NAME -->``; this hook puts the repository file ``NAME`` in its
place at build time, with its links made relative to ``docs/`` (``docs/x.md``
becomes ``x.md``, the two root files become their pages), so one text serves
GitHub and the site.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = re.compile(r"<!--\s*include:\s*(?P<name>[A-Z][A-Z_]*\.md)\s*-->")
#: a root file's link target -> the same target from docs/
LINKS = {"docs/": "", "CHANGELOG.md": "changelog.md", "CONTRIBUTING.md": "contributing.md"}
LINK = re.compile(r"\]\((?P<prefix>docs/|CHANGELOG\.md|CONTRIBUTING\.md)")


def on_page_markdown(markdown: str, **_: Any) -> str:
    def include(match: re.Match[str]) -> str:
        text = (ROOT / match["name"]).read_text(encoding="utf-8")
        return LINK.sub(lambda m: "](" + LINKS[m["prefix"]], text)

    return INCLUDE.sub(include, markdown)
