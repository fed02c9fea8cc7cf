"""Alembic support: operations on ``op``, autogenerate, a Spanner impl, the project template.

Importing this package registers nothing: the ``seqkeys`` plugin
(:mod:`sqlalchemy_seqkeys.alembic.plugin`) does when Alembic starts, or :func:`register`
where no entry point is installed. Here are the operation classes, :func:`render_item` for
``env.py``, :func:`declared_sequences`, and :func:`template_path`: the ``seqkeys`` template
for ``alembic init -t``, which ``seqkeys alembic-init`` uses.

User guide: docs/alembic.md.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from sqlalchemy_seqkeys.errors import MissingExtraError

if importlib.util.find_spec("alembic") is None:
    raise MissingExtraError(
        "sqlalchemy_seqkeys.alembic needs Alembic: pip install 'sqlalchemy-seqkeys[alembic]'"
    )

# Alembic first: importing itself, it loads the seqkeys plugin, which imports
# this package's modules (it must not find them half imported)
import alembic  # noqa: F401

from sqlalchemy_seqkeys.alembic import ops
from sqlalchemy_seqkeys.alembic import plugin as plugin  # setup(), for Alembic
from sqlalchemy_seqkeys.alembic import pooled_ops as pooled_ops  # op.*_pooled_sequence
from sqlalchemy_seqkeys.alembic import spanner as spanner
from sqlalchemy_seqkeys.alembic.autogen import declared_sequences, render_item
from sqlalchemy_seqkeys.alembic.ops import *  # noqa: F403 (the operations are public here)
from sqlalchemy_seqkeys.alembic.plugin import register

__all__ = [
    *ops.__all__,
    "declared_sequences",
    "register",
    "render_item",
    "template_path",
]


def template_path() -> Path:
    """The directory of the ``seqkeys`` Alembic template.

    Inside an installed wheel it is ``sqlalchemy_seqkeys/alembic_templates/seqkeys``;
    in a source checkout, ``alembic_templates/seqkeys`` beside the package.

    Example::

        >>> (template_path() / "env.py").is_file()
        True
    """
    package = Path(__file__).resolve().parent.parent
    for candidate in (
        package / "alembic_templates" / "seqkeys",
        package.parent / "alembic_templates" / "seqkeys",
    ):
        if (candidate / "env.py").is_file():
            return candidate
    raise FileNotFoundError(
        "the seqkeys Alembic template is missing from this installation; reinstall "
        "sqlalchemy-seqkeys"
    )
