"""A seqkeys sequence among a Column's positional arguments, as a ``Sequence`` stands there.

``Column("id", BigInteger, PooledSequence("order_id"))`` means exactly
``default=PooledSequence("order_id")``: see :class:`PositionalDefault`.

Design: docs/architecture.md.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from ._compat import ColumnArgument, set_column_default
from .errors import SeqKeysError

__all__ = ["PositionalDefault"]


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
