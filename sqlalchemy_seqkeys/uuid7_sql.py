"""``server_uuid7()``: the server's own UUIDv7 function, as a server default or in any SQL.

PostgreSQL 18's ``uuidv7()`` and MariaDB 11.7's ``UUID_v7()``; elsewhere
compiling it raises :class:`~sqlalchemy_seqkeys.UnsupportedServerFunctionError`.
As a server default it checks the column's storage when the DDL is compiled (a
``uuid`` column or 36 characters of text on PostgreSQL, ``UUID`` or ``CHAR(36)``
on MariaDB) and raises the same error for any other. Its client-side twin is
:func:`~sqlalchemy_seqkeys.new_uuid7`. How to use it and how server and client
keys sort in one table: docs/strategies/comb-uuid7.md, section "Minted by the
server".
"""

from __future__ import annotations

import uuid
import warnings
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
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
    ``uuid.UUID``. Each subclass compiles per dialect. As a server default each
    column gets an element of its own, which knows the column (the DDL checks
    its storage); in a statement it has no column.

    Example::

        >>> isinstance(server_uuid7(), ServerUuidFunction)
        True
    """

    type = CombGuid()
    inherit_cache = True

    def __init__(self) -> None:
        super().__init__()
        self._column: sa.Column[Any] | None = None

    @property
    def column(self) -> sa.Column[Any] | None:
        """The column this is the server default of; None in a statement."""
        return self._column

    def _for_column(self, column: sa.Column[Any]) -> ServerUuidFunction:
        """An element of the same function, the server default of ``column``."""
        own = type(self)()
        own._column = column  # a strong reference: a MetaData with it still pickles
        return own


class ServerKeyDefault(sa.DefaultClause):
    """The ``DefaultClause`` of a column whose server default is a :class:`ServerUuidFunction`.

    Its ``arg`` is an element of the column it is attached to, made when it is
    first read there: the DDL checks the storage of the column it is compiled
    for. SQLAlchemy's copies of the clause (``to_metadata``, a mixin's column,
    an ``Annotated`` template merged into each model's column) are of this
    class too, each attached to its own column.

    Example::

        >>> column = sa.Column("id", CombGuid(), primary_key=True, server_default=server_uuid7())
        >>> isinstance(column.server_default, ServerKeyDefault)
        True
        >>> column.server_default.arg.column is column
        True
    """

    @property
    def arg(self) -> ServerUuidFunction:
        """The function, as the server default of the column the clause is attached to."""
        given: ServerUuidFunction = self.__dict__["given"]
        column = self.__dict__.get("column")
        if column is None:
            return given
        own: ServerUuidFunction | None = self.__dict__.get("own")
        if own is None or own.column is not column:  # a copy attached to another column
            own = given._for_column(column)
            self.__dict__["own"] = own
        return own

    @arg.setter
    def arg(self, value: ServerUuidFunction) -> None:
        self.__dict__["given"] = value
        self.__dict__.pop("own", None)


@event.listens_for(sa.DefaultClause, "after_parent_attach")
def _give_the_column_its_own(clause: sa.DefaultClause, column: sa.Column[Any]) -> None:
    # Column(server_default=server_uuid7()) wraps the function in a plain
    # DefaultClause, and the copies SQLAlchemy makes of a clause share its arg
    # (the ORM's merge of an Annotated template fires no event): the column
    # gets a ServerKeyDefault instead, whose copies stay of that class.
    if type(clause) is not sa.DefaultClause or not isinstance(clause.arg, ServerUuidFunction):
        return
    own = ServerKeyDefault(clause.arg, for_update=clause.for_update)
    own.column = column
    if own.for_update:
        column.server_onupdate = own
    else:
        column.server_default = own


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


# -- the column's storage ----------------------------------------------------------------

#: what every refusal offers instead
CLIENT_SIDE = (
    "mint the key on the client instead: "
    "mapped_column(CombGuid(), primary_key=True, default=new_uuid7)"
)

#: PostgreSQL's uuidv7() returns uuid; the server casts it to text on assignment
_POSTGRESQL_STORAGE = ("UUID", "CHAR(36)", "VARCHAR(36)", "TEXT")


def column_storage(element: ServerUuidFunction, dialect: Dialect) -> str | None:
    """The column's type as the DDL writes it (``UUID``, ``BINARY(16)``); None: no column."""
    column = element.column
    if column is None:
        return None
    spec = dialect.type_compiler_instance.process(column.type, type_expression=column)
    return " ".join(spec.upper().split())


def check_storage(
    element: ServerUuidFunction,
    dialect: Dialect,
    server: str,
    function: str,
    wanted: tuple[str, ...],
    declare: str,
    fits: str = "keeps time order only in",
    *,
    declared: str,
) -> None:
    """Raise unless the column (if known) is stored as one of ``wanted``.

    A form matches the type as the DDL writes it, alone or with attributes
    after it (``CHAR(36) CHARACTER SET ASCII``).

    :param declared: the call as the user wrote it (``"server_uuid()"``).
    :param server: the server, for the message (``"MariaDB 10.11.6"``).
    :param function: what the default compiles to there (``"UUID()"``).
    :param wanted: the types, as the DDL writes them, it goes into.
    :param declare: the column type that fixes it (``"CombGuid()"``).
    :param fits: why only those, completed by "a UUID column".
    """
    storage = column_storage(element, dialect)
    if storage is None or any(storage == f or storage.startswith(f"{f} ") for f in wanted):
        return
    column = element.column
    table = getattr(column, "table", None)
    name = getattr(column, "name", None)
    where = f"column {table.name}.{name}" if table is not None else f"column {name}"
    raise UnsupportedServerFunctionError(
        f"{declared}: on {server} the server's key is {function}, which {fits} "
        f"a {' or '.join(wanted)} column, and {where} is {storage}; declare it {declare}, "
        f"or {CLIENT_SIDE}"
    )


def check_postgresql_storage(element: ServerUuidFunction, dialect: Dialect, declared: str) -> None:
    """Raise unless the column takes ``uuidv7()``: a ``uuid``, or 36 characters of text."""
    check_storage(
        element,
        dialect,
        declared=declared,
        server=server_named("PostgreSQL", dialect),
        function="uuidv7()",
        wanted=_POSTGRESQL_STORAGE,
        declare="CombGuid()",
        fits="fits only",
    )


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
    check_postgresql_storage(element, dialect, "server_uuid7()")
    return "uuidv7()"


def _compile_mysql_family(element: ServerUuid7, compiler: SQLCompiler, **kw: Any) -> str:
    dialect = compiler.dialect
    if not getattr(dialect, "is_mariadb", False):
        raise _refuse(server_named("MySQL", dialect))
    if _older(dialect, _MARIADB_MIN):
        raise _refuse(f"{server_named('MariaDB', dialect)} (UUID_v7() came in 11.7)")
    check_storage(
        element,
        dialect,
        declared="server_uuid7()",
        server=server_named("MariaDB", dialect),
        function="UUID_v7()",
        wanted=("UUID", "CHAR(36)"),
        declare="CombGuid(native_uuid=True) or CombGuid()",
        fits="fits only",
    )
    return "UUID_v7()"


compiles(ServerUuid7, "mysql")(_compile_mysql_family)
compiles(ServerUuid7, "mariadb")(_compile_mysql_family)
