"""Alembic support: operations on ``op``, autogenerate, a Spanner impl, the template.

The ``seqkeys`` Alembic plugin (:mod:`sqlalchemy_seqkeys.alembic.plugin`,
published through the ``alembic.plugins`` entry point) registers, when
Alembic starts:

- the operations of :mod:`sqlalchemy_seqkeys.alembic.ops`
  (``op.create_sequences_table()``, ``op.create_table_sequence(...)``,
  ``op.create_bit_reversed_sequence(...)``, ``op.create_worker_lease_table()``
  and their ``drop_`` reverses; ``op.make_sequence_names_case_sensitive()``,
  ``op.upgrade_worker_lease_table()`` and ``op.resync_table_sequence(...)``)
  and of :mod:`sqlalchemy_seqkeys.alembic.pooled_ops`;
- autogenerate comparisons (:mod:`sqlalchemy_seqkeys.alembic.autogen`), which
  ``env.py`` enables with ``autogenerate_plugins=[..., "seqkeys"]``;
- an Alembic impl for ``spanner+spanner`` (:mod:`sqlalchemy_seqkeys.alembic.spanner`).

Importing this package registers nothing. A program that drives Alembic
itself from a checkout that is not installed (no entry point) calls
:func:`register`. :func:`render_item` renders shard columns and ``server_uuid7()``
defaults; :func:`template_path` is the ``seqkeys`` template for
``alembic init -t``, which ``seqkeys alembic-init DIR`` uses.

Example (``env.py``)::

    import sqlalchemy_seqkeys.alembic

    context.configure(connection=connection, target_metadata=Base.metadata,
                      autogenerate_plugins=["alembic.autogenerate.*", "seqkeys"],
                      render_item=sqlalchemy_seqkeys.alembic.render_item)
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
