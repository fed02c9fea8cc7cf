"""``server_uuid7()``: the server's own UUIDv7 function, as a server default or in any SQL.

PostgreSQL 18's ``uuidv7()`` and MariaDB 11.7's ``UUID_v7()``; elsewhere
compiling it raises :class:`~sqlalchemy_seqkeys.UnsupportedServerFunctionError`.
Its client-side twin is :func:`~sqlalchemy_seqkeys.new_uuid7`. How to use it and
how server and client keys sort in one table: docs/strategies/comb-uuid7.md,
section "Minted by the server".
"""

from __future__ import annotations

import uuid
import warnings
from typing import Any

from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

from ._dialect import dialect_key, facts
from .dialects import server_named, server_version
from .errors import UnsupportedServerFunctionError
from .types import CombGuid

__all__ = ["ServerUuid7", "server_uuid7"]

#: first server versions with a UUIDv7 function
_POSTGRESQL_MIN = (18,)
_MARIADB_MIN = (11, 7)


class ServerUuidFunction(FunctionElement[uuid.UUID]):
    """A UUID the server mints: the base of ``ServerUuid7`` and ``ServerUuid``.

    It takes no arguments (``ServerUuid7(x)`` is a ``TypeError``, not ignored);
    its type is :class:`~sqlalchemy_seqkeys.CombGuid`, so a select gives back
    ``uuid.UUID``. Each subclass compiles per dialect.

    Example::

        >>> isinstance(server_uuid7(), ServerUuidFunction)
        True
    """

    type = CombGuid()
    inherit_cache = True

    def __init__(self) -> None:
        super().__init__()


class ServerUuid7(ServerUuidFunction):
    """The SQL expression :func:`server_uuid7` returns: the server's UUIDv7, compiled per dialect.

    Example (MariaDB spells it ``UUID_v7()``)::

        >>> from sqlalchemy.dialects import mysql
        >>> mariadb = mysql.dialect(is_mariadb=True)
        >>> str(ServerUuid7().compile(dialect=mariadb))
        'UUID_v7()'
    """

    name = "uuidv7"
    inherit_cache = True  # read from each class itself


def server_uuid7() -> ServerUuid7:
    """The server's UUIDv7 function, exactly version 7: a server default, or part of any statement.

    ``uuidv7()`` on PostgreSQL 18+, ``UUID_v7()`` on MariaDB 11.7+. Anywhere
    else compiling it raises
    :class:`~sqlalchemy_seqkeys.UnsupportedServerFunctionError`, which says to
    mint the key on the client with ``default=new_uuid7`` (the same layout). A
    dialect that does not know its server version (``postgresql.dialect()``,
    offline Alembic) gets the function. For the best key any server mints (a
    time-ordered UUID of another version where there is no UUIDv7), use
    :func:`~sqlalchemy_seqkeys.server_uuid`.

    Example::

        >>> from sqlalchemy.dialects import postgresql
        >>> str(server_uuid7().compile(dialect=postgresql.dialect()))
        'uuidv7()'
        >>> import sqlalchemy as sa
        >>> column = sa.Column("id", CombGuid(), primary_key=True, server_default=server_uuid7())
    """
    return ServerUuid7()


#: old names -> the new ones: they work for one more minor version, with a warning
#: (the package's own sqlalchemy_seqkeys.uuidv7 and .UuidV7 warn the same way)
_DEPRECATED = {"uuidv7": "server_uuid7", "UuidV7": "ServerUuid7"}


def __getattr__(name: str) -> Any:
    new = _DEPRECATED.get(name)
    if new is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"sqlalchemy_seqkeys.uuid7_sql.{name} is deprecated since 0.3 and goes away in 0.4; "
        f"use sqlalchemy_seqkeys.{new} instead (the same object)",
        DeprecationWarning,
        stacklevel=2,
    )
    return globals()[new]


def _refuse(server: str) -> UnsupportedServerFunctionError:
    return UnsupportedServerFunctionError(
        f"{server} has no UUIDv7 function, so server_uuid7() cannot be used there "
        "(PostgreSQL 18+ has uuidv7(), MariaDB 11.7+ UUID_v7()); mint the key on the "
        "client instead: mapped_column(CombGuid(), primary_key=True, default=new_uuid7), "
        "the same layout"
    )


def _older(dialect: Dialect, minimum: tuple[int, ...]) -> bool:
    """Whether a known server version is below ``minimum`` (unknown: no)."""
    version = server_version(dialect)
    return version is not None and version < minimum


@compiles(ServerUuid7)
def _compile_elsewhere(element: ServerUuid7, compiler: SQLCompiler, **kw: Any) -> str:
    name = dialect_key(compiler.dialect)
    if name == "default":  # str(statement): for reading, never sent to a server
        return "uuidv7()"
    raise _refuse(facts(name).display_name or f"the {name!r} dialect")


@compiles(ServerUuid7, "postgresql")
def _compile_postgresql(element: ServerUuid7, compiler: SQLCompiler, **kw: Any) -> str:
    dialect = compiler.dialect
    if _older(dialect, _POSTGRESQL_MIN):
        raise _refuse(f"{server_named('PostgreSQL', dialect)} (uuidv7() came in 18)")
    return "uuidv7()"


def _compile_mysql_family(element: ServerUuid7, compiler: SQLCompiler, **kw: Any) -> str:
    dialect = compiler.dialect
    if not getattr(dialect, "is_mariadb", False):
        raise _refuse(server_named("MySQL", dialect))
    if _older(dialect, _MARIADB_MIN):
        raise _refuse(f"{server_named('MariaDB', dialect)} (UUID_v7() came in 11.7)")
    return "UUID_v7()"


compiles(ServerUuid7, "mysql")(_compile_mysql_family)
compiles(ServerUuid7, "mariadb")(_compile_mysql_family)
