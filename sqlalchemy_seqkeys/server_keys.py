"""``server_uuid()``: the best key the database server mints itself, as a server default.

Declare ``server_default=server_uuid()``; :class:`ServerUuid` compiles per dialect
(``uuidv7()``, ``UUID_v7()``, ``UUID()``, ``UUID_TO_BIN(UUID(), 1)``,
``NEWSEQUENTIALID()``, ``GENERATE_UUID()``); the ORM reads the key back with
``RETURNING`` where the server has it (not MySQL: use Core there). A server without
such a function, or a key column of the wrong storage (on every server, the column
whose DDL is compiled), raises :class:`~sqlalchemy_seqkeys.UnsupportedServerFunctionError`
when the DDL is compiled; a dialect that never connected gets its newest server's DDL.

User guide: docs/choosing.md (Server-minted keys).
"""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler

from ._dialect import dialect_key, facts
from .dialects import server_named, server_version
from .errors import UnsupportedServerFunctionError
from .uuid7_sql import (
    CLIENT_SIDE,
    ServerUuid7,
    ServerUuidFunction,
    check_postgresql_storage,
    check_storage,
)

__all__ = ["ServerUuid", "server_uuid"]

#: MariaDB's UUID type came in 10.7; MySQL's DEFAULT (expression) in 8.0.13
_MARIADB_UUID_TYPE = (10, 7)
_MYSQL_DEFAULT_EXPRESSIONS = (8, 0, 13)


class ServerUuid(ServerUuidFunction):
    """The SQL expression :func:`server_uuid` returns; compiled per dialect.

    Each column gets one of its own, which knows the column (the DDL checks
    its storage).

    Example::

        >>> import sqlalchemy as sa
        >>> from sqlalchemy_seqkeys import CombGuid
        >>> column = sa.Column("id", CombGuid(), primary_key=True, server_default=server_uuid())
        >>> column.server_default.arg.column is column
        True
    """

    name = "server_uuid"
    inherit_cache = True  # read from each class itself


def server_uuid() -> ServerUuid:
    """A server default that has the server mint the key: the best UUID it has.

    ``uuidv7()`` on PostgreSQL 18+, ``UUID_v7()`` on MariaDB 11.7+, ``UUID()``
    into MariaDB's ``UUID`` type on 10.7 to 11.6, ``UUID_TO_BIN(UUID(), 1)``
    on MySQL 8.0.13+, ``NEWSEQUENTIALID()`` on SQL Server, ``GENERATE_UUID()``
    on Spanner; anywhere else compiling it raises
    :class:`~sqlalchemy_seqkeys.UnsupportedServerFunctionError`.

    The keys are unique always, and ascend in the column's order, except:

    - MariaDB 10.7 to 11.6: ``UUID()`` is version 1, which MariaDB's ``UUID``
      type sorts by node, then clock sequence, then time. MariaDB draws a new
      random clock sequence at every server start (and when the clock steps
      back), and each server has its own node, so the keys ascend within one
      server run only: after a restart, or on another server (a failover), new
      keys form a new ascending run elsewhere in the index, before or after
      all older ones.
    - SQL Server: ``NEWSEQUENTIALID()`` ascends until Windows restarts, and may
      then start from a lower range; each server has its own ranges.
    - Spanner: ``GENERATE_UUID()`` is random on purpose.

    Where ``ORDER BY id`` must follow time across restarts and servers, mint
    the keys on the client (``default=new_uuid7``) or use MariaDB 11.7+'s
    ``UUID_v7()`` (:func:`~sqlalchemy_seqkeys.server_uuid7`).

    Example::

        >>> from sqlalchemy.dialects import mssql
        >>> str(server_uuid().compile(dialect=mssql.dialect()))
        'NEWSEQUENTIALID()'
    """
    return ServerUuid()


def _refuse(server: str, why: str) -> UnsupportedServerFunctionError:
    return UnsupportedServerFunctionError(f"server_uuid(): {server} {why}; {CLIENT_SIDE}")


#: the storage check, its messages naming server_uuid()
_check_storage = functools.partial(check_storage, declared="server_uuid()")


# -- per dialect -------------------------------------------------------------------------


@compiles(ServerUuid)
def _compile_elsewhere(element: ServerUuid, compiler: SQLCompiler, **kw: Any) -> str:
    name = dialect_key(compiler.dialect)
    if name == "default":  # str(statement): for reading, never sent to a server
        return "server_uuid()"
    server = facts(name).display_name or f"the {name!r} dialect"
    raise _refuse(server, "has no server function that mints time-ordered UUIDs")


@compiles(ServerUuid, "postgresql")
def _compile_postgresql(element: ServerUuid, compiler: SQLCompiler, **kw: Any) -> str:
    # uuidv7_sql knows which PostgreSQL has uuidv7(): one place for that version
    try:
        function = compiler.process(ServerUuid7(), **kw)  # no column: checks the version only
    except UnsupportedServerFunctionError as exc:
        raise _refuse(
            server_named("PostgreSQL", compiler.dialect),
            "has no time-ordered UUID function (uuidv7() came in 18; gen_random_uuid() "
            "is random and would scatter the index)",
        ) from exc
    check_postgresql_storage(element, compiler.dialect, "server_uuid()")
    return function


def _compile_mysql_family(element: ServerUuid, compiler: SQLCompiler, **kw: Any) -> str:
    dialect = compiler.dialect
    version = server_version(dialect)
    if getattr(dialect, "is_mariadb", False) or dialect.name == "mariadb":
        server = server_named("MariaDB", dialect)
        try:
            function = compiler.process(ServerUuid7(), **kw)  # 11.7+, or no version known
        except UnsupportedServerFunctionError:
            pass
        else:
            _check_storage(
                element,
                dialect,
                server,
                function,
                ("UUID", "CHAR(36)"),
                "CombGuid(native_uuid=True) or CombGuid()",
            )
            return f"({function})"
        if version is not None and version < _MARIADB_UUID_TYPE:
            raise _refuse(server, "has neither UUID_v7() (11.7) nor the UUID type (10.7)")
        # MariaDB's UUID type sorts UUID() by node, clock sequence, then time:
        # ascending within one server run; as text it sorts by the low time bits
        _check_storage(
            element,
            dialect,
            server,
            "UUID() (version 1)",
            ("UUID",),
            "CombGuid(native_uuid=True) on MariaDB 10.11.6 or later (10.10.7, 11.0.4, "
            "11.1.3, 11.2.2 in their series)",
            fits="ascends within one server run (a restart starts a new run) only in",
        )
        return "(UUID())"
    server = server_named("MySQL", dialect)
    if version is not None and version < _MYSQL_DEFAULT_EXPRESSIONS:
        raise _refuse(server, "takes expressions as column defaults from 8.0.13 only")
    _check_storage(
        element, dialect, server, "UUID_TO_BIN(UUID(), 1)", ("BINARY(16)",), "CombGuid(binary=True)"
    )
    # In parentheses, as MySQL wants an expression default: SQLAlchemy 2.1 adds
    # them only where it knows the server's version, 2.0.28 never (2.1 does not
    # add a second pair to a default that starts with one)
    return "(UUID_TO_BIN(UUID(), 1))"


compiles(ServerUuid, "mysql")(_compile_mysql_family)
compiles(ServerUuid, "mariadb")(_compile_mysql_family)


@compiles(ServerUuid, "mssql")
def _compile_mssql(element: ServerUuid, compiler: SQLCompiler, **kw: Any) -> str:
    _check_storage(
        element,
        compiler.dialect,
        "SQL Server",
        "NEWSEQUENTIALID()",
        ("UNIQUEIDENTIFIER",),
        "CombGuid()",
        fits="ascends (until Windows restarts) only in",
    )
    return "NEWSEQUENTIALID()"


@compiles(ServerUuid, "spanner+spanner")  # sqlalchemy-spanner's dialect name
def _compile_spanner(element: ServerUuid, compiler: SQLCompiler, **kw: Any) -> str:
    _check_storage(
        element,
        compiler.dialect,
        "Spanner",
        "GENERATE_UUID()",
        ("STRING(36)",),
        "CombGuid()",
        fits="is text and fits only",
    )
    return "GENERATE_UUID()"  # sqlalchemy-spanner puts a default in parentheses itself
