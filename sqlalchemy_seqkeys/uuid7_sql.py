"""``uuidv7()``: the server's own UUIDv7 function, as a server default or in any expression.

PostgreSQL 18 has ``uuidv7()``, MariaDB 11.7 ``UUID_v7()``. Declare the key
with ``server_default=uuidv7()`` and rows inserted without a key get one from
the server; the ORM reads it back with ``RETURNING``::

    import uuid
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
    from sqlalchemy_seqkeys import CombGuid, uuidv7

    class Base(DeclarativeBase):
        pass

    class Event(Base):
        __tablename__ = "events"
        id: Mapped[uuid.UUID] = mapped_column(
            CombGuid(), primary_key=True, server_default=uuidv7()
        )

    # session.add(Event()); session.flush() -> event.id is the server's value

It compiles to ``uuidv7()`` on PostgreSQL and ``UUID_v7()`` on MariaDB. Where
the server has no such function (PostgreSQL before 18, MariaDB before 11.7,
MySQL, SQLite, SQL Server, Oracle, Spanner) it raises
:class:`UnsupportedServerFunctionError` when the statement or the DDL is
compiled, and says to mint the key on the client with ``default=new_uuid7``
(the same layout). A dialect that does not know its server version
(``postgresql.dialect()``, offline Alembic) gets the function.

Server keys and :func:`~sqlalchemy_seqkeys.new_uuid7` keys can share a
table; :mod:`sqlalchemy_seqkeys.uuid7` says how they sort against each other.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

from ._dialect import dialect_key, facts
from .errors import UnsupportedServerFunctionError
from .types import CombGuid

__all__ = ["UuidV7", "uuidv7"]

#: first server versions with a UUIDv7 function
_POSTGRESQL_MIN = (18,)
_MARIADB_MIN = (11, 7)


class UuidV7(FunctionElement[uuid.UUID]):
    """The SQL expression :func:`uuidv7` returns; compiled per dialect.

    Example::

        >>> isinstance(uuidv7(), UuidV7)
        True
    """

    name = "uuidv7"
    type = CombGuid()
    inherit_cache = True

    def __init__(self) -> None:
        # the server's function takes no arguments: UuidV7(x) is a TypeError, not ignored
        super().__init__()


def uuidv7() -> UuidV7:
    """The server's UUIDv7 function: a server default, or part of any statement.

    ``uuidv7()`` on PostgreSQL 18+, ``UUID_v7()`` on MariaDB 11.7+; anywhere
    else compiling it raises :class:`UnsupportedServerFunctionError`.

    Example::

        >>> from sqlalchemy.dialects import postgresql
        >>> str(uuidv7().compile(dialect=postgresql.dialect()))
        'uuidv7()'
        >>> import sqlalchemy as sa
        >>> column = sa.Column("id", CombGuid(), primary_key=True, server_default=uuidv7())
    """
    return UuidV7()


def _refuse(server: str) -> UnsupportedServerFunctionError:
    return UnsupportedServerFunctionError(
        f"{server} has no UUIDv7 function, so uuidv7() cannot be used there "
        "(PostgreSQL 18+ has uuidv7(), MariaDB 11.7+ UUID_v7()); mint the key on the "
        "client instead: mapped_column(CombGuid(), primary_key=True, default=new_uuid7), "
        "the same layout"
    )


def _version(info: tuple[int | str, ...] | None) -> str:
    return "" if not info else " " + ".".join(str(part) for part in info)


def _older(info: tuple[int | str, ...] | None, minimum: tuple[int, ...]) -> bool:
    """Whether a known server version is below ``minimum`` (unknown: no)."""
    if not info:
        return False
    numbers = []
    for part in info:  # leading numbers only: some servers add words
        if not isinstance(part, int):
            break
        numbers.append(part)
    return tuple(numbers) < minimum


@compiles(UuidV7)
def _compile_elsewhere(element: UuidV7, compiler: SQLCompiler, **kw: Any) -> str:
    name = dialect_key(compiler.dialect)
    if name == "default":  # str(statement): for reading, never sent to a server
        return "uuidv7()"
    raise _refuse(facts(name).display_name or f"the {name!r} dialect")


@compiles(UuidV7, "postgresql")
def _compile_postgresql(element: UuidV7, compiler: SQLCompiler, **kw: Any) -> str:
    info = compiler.dialect.server_version_info
    if _older(info, _POSTGRESQL_MIN):
        raise _refuse(f"PostgreSQL{_version(info)} (uuidv7() came in 18)")
    return "uuidv7()"


def _compile_mysql_family(element: UuidV7, compiler: SQLCompiler, **kw: Any) -> str:
    dialect = compiler.dialect
    info = dialect.server_version_info
    if not getattr(dialect, "is_mariadb", False):
        raise _refuse(f"MySQL{_version(info)}")
    if _older(info, _MARIADB_MIN):
        raise _refuse(f"MariaDB{_version(info)} (UUID_v7() came in 11.7)")
    return "UUID_v7()"


compiles(UuidV7, "mysql")(_compile_mysql_family)
compiles(UuidV7, "mariadb")(_compile_mysql_family)
