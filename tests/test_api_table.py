"""The public API table of the reference docs lists every public name, and only those.

``docs/reference/index.md`` has a table of every name ``sqlalchemy_seqkeys``
exports (the errors have their own page) and a table of the deprecated names
with what replaces them: a name added, renamed or deprecated without a row
there fails here.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import sqlalchemy_seqkeys as sk
from sqlalchemy_seqkeys import errors

INDEX = Path(__file__).resolve().parent.parent / "docs" / "reference" / "index.md"


def _table(heading: str) -> dict[str, str]:
    """The first column's names of the table under ``heading`` -> the rest of the row."""
    text = INDEX.read_text(encoding="utf-8")
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([A-Za-z_0-9]+)` \|(.*)$", section, flags=re.MULTILINE)
    return dict(rows)


def _deprecated() -> set[str]:
    names = set(sk._DEPRECATED)
    for name in sk.__all__:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            doc = getattr(sk, name).__doc__ or ""
        if doc.startswith("Deprecated"):
            names.add(name)
    return names


def test_every_public_name_has_a_row() -> None:
    public = set(sk.__all__) - set(errors.__all__) - {"__version__"} - _deprecated()
    listed = set(_table("Every public name"))
    assert public - listed == set(), "add a row to docs/reference/index.md"
    assert listed - public == set(), "a row names no public name (renamed or removed?)"


def test_every_deprecated_name_has_its_replacement() -> None:
    rows = _table("Deprecated names")
    assert set(rows) == _deprecated()
    for old, rest in rows.items():
        new = re.search(r"`([A-Za-z_0-9]+)`", rest)
        assert new is not None, (old, rest)
        assert new.group(1) in sk.__all__, (old, rest)
