"""``UnsignedBigInteger``: the key column of an unsigned snowflake layout, on every engine.

Ids up to 2**64 - 1 in ``NUMERIC(20, 0)`` (MySQL and MariaDB: ``BIGINT UNSIGNED``;
SQLite: ``BIGINT``, whose integers stop at 2**63 - 1), compared as that type and
read back as ``int``.

User guide: docs/strategies/snowflake.md (Layouts, 64 bits).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy import types as sqltypes
from sqlalchemy.dialects import mysql
from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.sql.operators import OperatorType

from ._validate import shown
from .errors import InvalidSnowflakeError

__all__ = ["UnsignedBigInteger"]

_INT64_MAX = 2**63 - 1
_UINT64_MAX = 2**64 - 1

#: what each engine stores: the key-column checks judge this type, variants included
_STORAGE: sqltypes.TypeEngine[Any] = (
    sa.Numeric(20, 0)
    .with_variant(mysql.BIGINT(unsigned=True), "mysql", "mariadb")
    .with_variant(sa.BigInteger(), "sqlite")
)


def _not_an_id(value: object) -> InvalidSnowflakeError:
    if isinstance(value, int) and not isinstance(value, bool):
        hint = "an unsigned layout's ids are never negative nor past 64 bits"
    elif isinstance(value, (float, Decimal)):
        hint = (
            "the engines round a fraction each their own way; pass int(value) "
            "if it is a whole number"
        )
    else:
        hint = "pass the id as an int"
    return InvalidSnowflakeError(
        f"UnsignedBigInteger takes an int from 0 to 2**64 - 1, not {shown(value)} "
        f"({type(value).__name__}); {hint}"
    )


class UnsignedBigInteger(sqltypes.TypeDecorator[int]):
    """A column of integers from 0 to 2**64 - 1: the ids of an ``unsigned=True`` layout.

    PostgreSQL (and every engine not named here) stores ``NUMERIC(20, 0)``,
    MySQL and MariaDB ``BIGINT UNSIGNED``, SQLite ``BIGINT``: SQLite holds no
    integer past 2**63 - 1, so such a value raises ``OverflowError`` there, in
    an ``INSERT`` or a ``WHERE``, instead of being rounded. Values come back as
    ``int`` (a ``NUMERIC`` column alone reads ``Decimal``), and a Python int
    compared with the column is bound as the column's type: with a plain
    ``Numeric``, SQLAlchemy binds an int past 32 bits as ``BIGINT``, which
    psycopg and asyncpg render as ``::BIGINT``, and PostgreSQL refuses
    ``id == 2**63`` with "bigint out of range".

    Only an int from 0 to 2**64 - 1 (an int subclass binds as its int value)
    or None is bound, in an ``INSERT`` and in a ``WHERE``; anything else (a
    negative int, 2**64 or more, a bool, a float, a ``Decimal``, text) raises
    :class:`~sqlalchemy_seqkeys.InvalidSnowflakeError` before it is sent: the
    engines would round ``2.5`` each their own way, and PostgreSQL would store
    ``-1``.

    Example::

        >>> from sqlalchemy.dialects import mysql, postgresql, sqlite
        >>> UnsignedBigInteger().compile(dialect=postgresql.dialect())
        'NUMERIC(20, 0)'
        >>> UnsignedBigInteger().compile(dialect=mysql.dialect())
        'BIGINT UNSIGNED'
        >>> UnsignedBigInteger().compile(dialect=sqlite.dialect())
        'BIGINT'
    """

    impl = _STORAGE
    cache_ok = True

    def __init__(self) -> None:
        # no arguments: the storage is fixed (TypeDecorator would drop any given one silently)
        super().__init__()

    def __repr__(self) -> str:
        return "UnsignedBigInteger()"

    @property
    def python_type(self) -> type[int]:
        return int

    def coerce_compared_value(
        self, op: OperatorType | None, value: Any
    ) -> sqltypes.TypeEngine[Any]:
        # an int compared with the column is bound as the column's own type
        return self

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        # Only an int: the engines round a float or a Decimal each their own way
        # (2.5 is 3 on PostgreSQL, 2 on MariaDB and SQLite), and PostgreSQL's
        # NUMERIC(20, 0) stores -1 and 2**64 as they are.
        if not isinstance(value, int) or isinstance(value, bool):
            raise _not_an_id(value)
        number = int(value)  # an int subclass (an IntEnum) binds as its int value
        if not 0 <= number <= _UINT64_MAX:
            raise _not_an_id(value)
        # An int past 2**63 - 1 goes to the driver as a Decimal, which every driver
        # sends as a number (asyncmy 0.2.9, the lowest supported, cannot pack such
        # an int); SQLite keeps the int, which it refuses past 2**63 - 1.
        if number > _INT64_MAX and dialect.name != "sqlite":
            return Decimal(number)
        return number

    def process_result_value(self, value: Any, dialect: Dialect) -> int | None:
        # NUMERIC reads as Decimal (PostgreSQL); the others read ints already
        return None if value is None else int(value)
