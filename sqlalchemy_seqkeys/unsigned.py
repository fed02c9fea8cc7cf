"""``UnsignedBigInteger``: the key column of an unsigned snowflake layout, on every engine.

Ids up to 2**64 - 1 in ``NUMERIC(20, 0)`` (MySQL and MariaDB: ``BIGINT UNSIGNED``;
SQLite: ``BIGINT``, whose integers stop at 2**63 - 1), read back as ``int``. A
stored id must be an integer in that range; a value compared with the column may
be any number, bound exactly (``_ComparedUnsigned``).

User guide: docs/strategies/snowflake.md (Layouts, 64 bits).
"""

from __future__ import annotations

import math
import operator
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

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_UINT64_MAX = 2**64 - 1

#: what each engine stores: the key-column checks judge this type, variants included
_STORAGE: sqltypes.TypeEngine[Any] = (
    sa.Numeric(20, 0)
    .with_variant(mysql.BIGINT(unsigned=True), "mysql", "mariadb")
    .with_variant(sa.BigInteger(), "sqlite")
)


def _not_an_id(value: object, *, integer: bool) -> InvalidSnowflakeError:
    if integer:
        hint = "an unsigned layout's ids are never negative nor past 64 bits"
    elif isinstance(value, (float, Decimal)):
        hint = (
            "the engines round a fraction each their own way; pass int(value) "
            "if it is a whole number"
        )
    else:
        hint = "pass the id as an int"
    return InvalidSnowflakeError(
        f"UnsignedBigInteger takes an integer from 0 to 2**64 - 1, not {shown(value)} "
        f"({type(value).__name__}); {hint}"
    )


def _integer(value: object) -> int | None:
    """``value`` as an int if it is an integer (``operator.index``: an int, numpy's), else None.

    A bool is no id (``operator.index(True)`` is 1; numpy's bool, ``numpy.bool_``, has
    a deprecated ``__index__`` before numpy 2, and none since).
    """
    if isinstance(value, bool) or type(value).__name__ in ("bool", "bool_"):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


def _exact_int(number: int, dialect: Dialect) -> int | Decimal:
    # An int outside 64 signed bits goes to the driver as a Decimal, which every
    # driver sends as a number (asyncmy 0.2.9, the lowest supported, cannot pack
    # such an int); SQLite keeps the int, which it refuses (OverflowError).
    if not _INT64_MIN <= number <= _INT64_MAX and dialect.name != "sqlite":
        return Decimal(number)
    return number


class _ComparedUnsigned(sqltypes.TypeDecorator[int]):
    """What a value compared with an ``UnsignedBigInteger`` column binds as.

    Not a stored key: any number, a whole one bound exactly (``-1``, ``2**64``,
    ``Decimal("5")``, ``5.0``, a numpy int), a fraction as it is (``NUMERIC``
    without a scale: asyncpg casts a bound value to its type, and
    ``::NUMERIC(20, 0)`` would round 4.5 to 5). A bool, text or any other
    object raises :class:`~sqlalchemy_seqkeys.InvalidSnowflakeError`. Its own
    class keeps it apart from the column's type in the statement cache.
    """

    impl = sa.Numeric().with_variant(sa.BigInteger(), "sqlite")
    cache_ok = True

    @property
    def python_type(self) -> type[int]:
        return int

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        sqlite = dialect.name == "sqlite"
        if isinstance(value, Decimal):
            # sent as it is: exact; SQLite's driver takes no Decimal (SQLAlchemy's
            # Numeric sends a float there), a whole one below 10**19 goes as an int
            if not sqlite:
                return value
            if value.is_finite() and value == value.to_integral_value() and value.adjusted() < 19:
                return int(value)
            return float(value)
        if isinstance(value, float):
            if value.is_integer():
                return _exact_int(int(value), dialect)
            # the shortest decimal that is this float: no integer lies between them
            return value if sqlite or not math.isfinite(value) else Decimal(repr(value))
        number = _integer(value)
        if number is None:
            raise InvalidSnowflakeError(
                f"UnsignedBigInteger compares with a number, not {shown(value)} "
                f"({type(value).__name__}); pass the id as an int"
            )
        return _exact_int(number, dialect)


#: the type a value compared with an ``UnsignedBigInteger`` column binds with
_COMPARED = _ComparedUnsigned()


class UnsignedBigInteger(sqltypes.TypeDecorator[int]):
    """A column of integers from 0 to 2**64 - 1: the ids of an ``unsigned=True`` layout.

    PostgreSQL (and every engine not named here) stores ``NUMERIC(20, 0)``,
    MySQL and MariaDB ``BIGINT UNSIGNED``, SQLite ``BIGINT``: SQLite holds no
    integer past 2**63 - 1, so such a value raises ``OverflowError`` there, in
    an ``INSERT`` or a ``WHERE``, instead of being rounded. Values come back as
    ``int`` (a ``NUMERIC`` column alone reads ``Decimal``); an expression of the
    column that is no whole number (``id * 0.5``) reads as the driver gives it.

    Stored (``INSERT``, ``UPDATE ... SET``): only an integer from 0 to
    2**64 - 1 (an int, an int subclass, a numpy integer: anything
    ``operator.index`` takes, a bool excepted) or None is bound; anything else
    (a negative int, 2**64 or more, a bool, a float, a ``Decimal``, text)
    raises :class:`~sqlalchemy_seqkeys.InvalidSnowflakeError` before it is
    sent: the engines would round ``2.5`` each their own way, and PostgreSQL
    would store ``-1``.

    Compared (``==``, ``<``, ``in_``, ``between``, and the operands of
    arithmetic such as ``id - 10`` or ``id * 0.5``): any number is taken, no
    stored key. A whole one (an int of any size, a numpy integer, an integral
    ``Decimal`` or float) is bound exactly, as a ``Decimal`` outside 64 signed
    bits (with a plain ``Numeric``, SQLAlchemy binds an int past 32 bits as
    ``BIGINT``, which psycopg and asyncpg render as ``::BIGINT``, and
    PostgreSQL refuses ``id == 2**63`` with "bigint out of range"); a fraction
    is compared as it is, never rounded to the column's scale (``id == 4.5``
    finds nothing, ``id > 4.5`` finds 5), sent as a ``Decimal`` (a float as its
    shortest decimal) except on SQLite, which takes a float. Text, a bool or
    any other object raises ``InvalidSnowflakeError``. A ``bindparam()``
    without a value binds as the column's own type, as a stored key.

    The error is raised while SQLAlchemy binds the statement's values, so it
    reaches the caller as ``sqlalchemy.exc.StatementError`` with the
    ``InvalidSnowflakeError`` in its ``.orig``: ``except SeqKeysError`` alone
    does not catch it (SQLAlchemy re-raises unwrapped only an error class that
    derives from ``sqlalchemy.exc.DontWrapMixin``).

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
        # A value compared with the column, or an operand of arithmetic on it, is
        # no stored key: it binds as _COMPARED (any number, exactly). INSERT and
        # UPDATE ... SET bind with the column's own type, which takes ids only.
        return _COMPARED

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        # Only an integer (an int, numpy's, any __index__ but a bool's): the engines
        # round a float or a Decimal each their own way (2.5 is 3 on PostgreSQL, 2
        # on MariaDB and SQLite), and PostgreSQL's NUMERIC(20, 0) stores -1 and
        # 2**64 as they are.
        number = _integer(value)  # an int subclass (an IntEnum) binds as its int value
        if number is None:
            raise _not_an_id(value, integer=False)
        if not 0 <= number <= _UINT64_MAX:
            raise _not_an_id(value, integer=True)
        return _exact_int(number, dialect)

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        # NUMERIC reads as Decimal (PostgreSQL); the others read ints already. An
        # expression of the column that is no whole number (id * 0.5) reads as the
        # driver gives it, not cut to an int.
        if value is None or isinstance(value, int):
            return value
        if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
            return int(value)
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value
