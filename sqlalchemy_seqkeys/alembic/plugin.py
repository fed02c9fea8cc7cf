"""The seqkeys Alembic plugin: :func:`setup`, which Alembic calls when it starts.

The ``alembic.plugins`` entry point ``seqkeys`` names this module, so every program that imports
``alembic`` loads it. :func:`setup` registers the operations (``ops``, ``pooled_ops``), how
autogenerate writes them and the Spanner impl, once, and adds the autogenerate comparators
(``autogen``, ``pooled_ops``, ``behind``) to the plugin, which ``env.py`` enables by naming
``seqkeys`` in ``autogenerate_plugins``. :func:`register` does the same where no entry point is
installed (a checkout); it is idempotent.

User guide: docs/alembic.md.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

# Alembic loads this module in the middle of its own import: only what is
# complete by then (not the alembic.autogenerate package's names)
from alembic.autogenerate.render import renderers
from alembic.runtime.plugins import Plugin
from alembic.util import DispatchPriority, PriorityDispatchResult

from sqlalchemy_seqkeys.alembic import autogen, behind, pooled_ops, spanner
from sqlalchemy_seqkeys.alembic.ops import IMPLEMENTATIONS, register_operations

__all__ = ["NAME", "register", "setup"]

#: the plugin's name in ``autogenerate_plugins`` (the entry point's name)
NAME = "seqkeys"

_Comparator = Callable[..., PriorityDispatchResult]

#: (comparator, target, element, priority), as Plugin.add_autogenerate_comparator takes them;
#: the schema comparators run last, after Alembic's own found the tables
COMPARATORS: tuple[tuple[_Comparator, str, str | None, DispatchPriority], ...] = (
    (autogen.compare_seqkeys, "schema", None, DispatchPriority.LAST),
    (pooled_ops.compare_pooled_sequences, "schema", None, DispatchPriority.LAST),
    (behind.compare_behind, "schema", None, DispatchPriority.LAST),
    (autogen.shard_columns_are_not_compared, "column", "server_default", DispatchPriority.FIRST),
    (autogen.uuidv7_defaults_match_by_name, "column", "server_default", DispatchPriority.FIRST),
)

#: the Plugin objects set up so far (one, unless somebody set the module up under two names)
_set_up: list[Plugin] = []


def setup(plugin: Plugin) -> None:
    """Register the seqkeys operations, renderers and Spanner impl (once), and the comparators.

    :param plugin: the Alembic ``Plugin`` that loads this module; the autogenerate
        comparators are added to it.

    Example::

        Plugin.setup_plugin_from_module(sqlalchemy_seqkeys.alembic.plugin, "seqkeys")
    """
    if not _set_up:
        register_operations()
        for op_class in IMPLEMENTATIONS:
            renderers.dispatch_for(op_class)(autogen.render_op)
        renderers.dispatch_for(behind.ResyncBehindOp)(behind.render)
        spanner.register()
    _set_up.append(plugin)
    for comparator, target, element, priority in COMPARATORS:
        plugin.add_autogenerate_comparator(comparator, target, element, priority=priority)


def register() -> None:
    """Set the plugin up where Alembic has not (no installed entry point); idempotent.

    For programs that drive Alembic themselves (``Operations``,
    ``produce_migrations``) from a checkout that is not installed; calling it
    where Alembic loaded the plugin does nothing.

    Example::

        >>> register()
        >>> from alembic.operations import Operations
        >>> hasattr(Operations, "create_table_sequence")
        True
    """
    if not _set_up:
        Plugin.setup_plugin_from_module(sys.modules[__name__], NAME)
