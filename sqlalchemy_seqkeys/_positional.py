"""A seqkeys sequence among a Column's positional arguments, as a ``Sequence`` stands there.

``Column("id", BigInteger, PooledSequence("order_id"))`` means exactly
``default=PooledSequence("order_id")``: see :class:`PositionalDefault`.

Design: docs/architecture.md.
"""

from __future__ import annotations

import weakref
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.sql.schema import DefaultGenerator

from ._compat import ColumnArgument, set_column_default
from .errors import SeqKeysError

__all__ = ["PositionalDefault"]

#: a column given one of these positionally -> (the ColumnDefault made for it, the object)
_given_positionally: weakref.WeakKeyDictionary[
    sa.Column[Any], tuple[DefaultGenerator, PositionalDefault]
] = weakref.WeakKeyDictionary()


class PositionalDefault(ColumnArgument):
    """Mixin: the object may be given to ``Column(...)`` positionally, meaning ``default=``.

    SQLAlchemy accepts ``Column("id", BigInteger, Sequence("order_id"))``; the
    library's sequence-like defaults (``PooledSequence``, ``BitReversedSequence``,
    ``TableSequence``) read the same way, so they are accepted there too::

        >>> from sqlalchemy_seqkeys import PooledSequence
        >>> column = sa.Column("id", sa.BigInteger, PooledSequence("order_id"), primary_key=True)
        >>> column.default.arg
        PooledSequence('order_id', batch_size=50)
    """

    def attach_to_column(self, parent: object, **kw: Any) -> None:
        """Become the column's ``default=`` (SQLAlchemy found it among the column's arguments)."""
        if not isinstance(parent, sa.Column):
            raise SeqKeysError(
                f"{self!r} is a column default: give it to a Column (positionally or as "
                f"default=...), not to {type(parent).__name__}"
            )
        if parent.default is not None:
            raise SeqKeysError(
                f"column {parent.name!r} has a default already ({parent.default!r}); "
                f"give {self!r} as its only default"
            )
        set_column_default(parent, self, **kw)
        if parent.default is not None:
            _given_positionally[parent] = (parent.default, self)


def _default_attaching(default: DefaultGenerator, parent: Any) -> None:
    """Refuse a default (a ``Sequence``) that would replace one given positionally.

    ``Column("id", BigInteger, PooledSequence("a"), Sequence("b"))``: the
    ``Sequence``, attached after, sets ``column.default`` over the first one
    without a word (``DefaultGenerator._set_parent``).
    """
    if not isinstance(parent, sa.Column) or default.for_update:
        return
    given = _given_positionally.get(parent)
    if given is None or given[0] is default or parent.default is not given[0]:
        return
    raise SeqKeysError(
        f"column {parent.name!r} has {given[1]!r} as its default already (given "
        f"positionally); {default!r} after it would replace it: give the column one default"
    )


def _install_listener() -> None:
    if not event.contains(DefaultGenerator, "before_parent_attach", _default_attaching):
        event.listen(DefaultGenerator, "before_parent_attach", _default_attaching)


_install_listener()
