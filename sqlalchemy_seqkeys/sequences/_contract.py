"""The one contract of the three sequence classes, written once.

:class:`~sqlalchemy_seqkeys.TableSequence`,
:class:`~sqlalchemy_seqkeys.PooledSequence` and
:class:`~sqlalchemy_seqkeys.BitReversedSequence` take ``start`` and
``batch_size``, and have the same methods with the same results
(:class:`KeySequence`); :class:`SequenceContract` holds the part they share,
as SQLAlchemy's ``IdentityOptions`` does for ``Sequence`` and ``Identity``.
See docs/reference/sequences.md.
"""

from __future__ import annotations

import contextlib
import inspect
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar, ParamSpec, Protocol, TypeVar, runtime_checkable

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine.mock import MockConnection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.schema import CreateSequence, DropSequence

from sqlalchemy_seqkeys._dialect import (
    check_identifier,
    check_sequence_start,
    create_refusals,
    drop_refusals,
)
from sqlalchemy_seqkeys._validate import check_flag, check_instance, check_name
from sqlalchemy_seqkeys.errors import SeqKeysError, SequenceExistsError, SequenceNotFoundError

from . import _aio
from .table import (
    block_holders,
    drop_table_sequence,
    native_key,
    sequences_table,
    sequences_table_exists,
)

if TYPE_CHECKING:
    from sqlalchemy.engine.default import DefaultExecutionContext
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
    from sqlalchemy.sql.compiler import DDLCompiler

    from .generators import TableSequence

__all__ = [
    "NOT_GIVEN",
    "KeySequence",
    "NativeOrRowSequence",
    "OwnSequence",
    "SequenceContract",
    "Unset",
    "create_native",
    "deprecated_factory",
    "drop_native",
    "native_exists",
    "resolve_alias",
]


@runtime_checkable
class KeySequence(Protocol):
    """What every sequence class of the library offers, with these results."""

    name: str
    start: int
    batch_size: int

    def __call__(self, context: DefaultExecutionContext) -> int: ...
    def create(self, bind: sa.Engine | sa.Connection, *, checkfirst: bool = ...) -> bool: ...
    def drop(self, bind: sa.Engine | sa.Connection, *, checkfirst: bool = ...) -> bool: ...
    def next_value(self, bind: sa.Engine | sa.Connection) -> int: ...
    def next_values(self, bind: sa.Engine | sa.Connection, n: int) -> list[int]: ...
    async def create_async(
        self, bind: AsyncEngine | AsyncConnection, *, checkfirst: bool = ...
    ) -> bool: ...
    async def drop_async(
        self, bind: AsyncEngine | AsyncConnection, *, checkfirst: bool = ...
    ) -> bool: ...
    async def next_value_async(self, bind: AsyncEngine | AsyncConnection) -> int: ...
    async def next_values_async(self, bind: AsyncEngine | AsyncConnection, n: int) -> list[int]: ...
    def attach(self, metadata: sa.MetaData) -> None: ...


class Unset(int):
    """An int default that knows it was not passed: an alias may then stand in for it.

    ``PooledSequence(name, allocation_size=20)`` must not meet a ``batch_size``
    the caller never wrote; an ``Unset(50)`` reads as 50 everywhere else,
    also in ``inspect.signature``.
    """

    __slots__ = ()


class _NotGiven:
    """The default of an alias argument: tells "not passed" from a None passed (refused)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "None"


#: an alias argument's default (``allocation_size=``, ``start_with_counter=``)
NOT_GIVEN: Any = _NotGiven()


def resolve_alias(
    value: int,
    name: str,
    alias_value: object,
    alias: str,
    error: type[SeqKeysError],
) -> object:
    """``value`` (argument ``name``), or ``alias_value`` if only the alias was passed.

    Both passed raises ``error``: the two would have to agree, and a
    disagreement cannot be settled here.
    """
    if alias_value is NOT_GIVEN:
        return int(value) if isinstance(value, Unset) else value
    if not isinstance(value, Unset):
        raise error(
            f"pass {name}= or its alias {alias}=, not both ({name}={value!r}, "
            f"{alias}={alias_value!r}); {name} is the name every sequence class takes"
        )
    return alias_value


_P = ParamSpec("_P")
_T = TypeVar("_T")


def deprecated_factory(
    cls: Callable[_P, _T], old: str, positional: tuple[str, ...], renames: dict[str, str], doc: str
) -> Callable[_P, _T]:
    """``old()``, a factory of version 0.2 that calls ``cls``: it warns on every call.

    The class takes the factory's argument names as aliases, so the call is
    passed on as written; the warning spells it with the class's names
    (``renames``), the arguments in ``positional`` given by keyword.
    """
    new = getattr(cls, "__name__", old)

    def factory(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        given = [*zip(positional, args, strict=False), *kwargs.items()]
        call = ", ".join(
            repr(value) if not n else f"{renames.get(key, key)}={value!r}"
            for n, (key, value) in enumerate(given)
        )
        warnings.warn(
            f"{old}() is deprecated since version 0.3 and goes in 0.4: use the class, "
            f"{new}({call}), which takes the same arguments",
            DeprecationWarning,
            stacklevel=2,
        )
        return cls(*args, **kwargs)

    factory.__name__ = factory.__qualname__ = old
    factory.__module__ = getattr(cls, "__module__", __name__)
    factory.__doc__ = doc
    # help() and inspect.signature show the class's arguments, returning the class
    factory.__signature__ = inspect.signature(cls).replace(  # type: ignore[attr-defined]
        return_annotation=new
    )
    return factory


class OwnSequence(sa.Sequence):
    """The native sequence behind a :class:`PooledSequence` or :class:`BitReversedSequence`.

    MariaDB makes it ``NOCACHE``: under its default ``CACHE 1000`` the stored next
    value runs up to 1,000 steps ahead of the one ``NEXTVAL`` hands out next, which
    no statement can read, so ``doctor`` could not tell imported keys from the
    sequence's own. Each ``NEXTVAL`` then writes that row: once per block.
    PostgreSQL's default cache (1) needs nothing.
    """


@compiles(CreateSequence, "mariadb")
@compiles(CreateSequence, "mysql")
def _create_sequence_mysql(create: CreateSequence, compiler: DDLCompiler, **kw: Any) -> str:
    text: str = compiler.visit_create_sequence(create, **kw)  # type: ignore[no-untyped-call]
    sequence = create.element
    if isinstance(sequence, OwnSequence) and sequence.cache is None:
        text += " NOCACHE"
    return text


def native_exists(conn: sa.Connection, sequence: sa.Sequence) -> bool:
    """Whether native ``sequence`` exists (its schema as ``conn``'s schema_translate_map says)."""
    schema = conn.schema_for_object(sequence)
    return bool(conn.dialect.has_sequence(conn, sequence.name, schema=schema))


def create_native(
    conn: sa.Connection, sequence: sa.Sequence, *, checkfirst: bool, error: type[SeqKeysError]
) -> bool:
    """``CREATE SEQUENCE``: True; where it exists, False with ``checkfirst``, else raise.

    Asked first, not caught after: a failed statement ends PostgreSQL's transaction.
    A start the engine cannot hold raises ``error`` before any statement; the
    server's refusals are the caller's to map (``create_refusals`` around the
    whole transaction: Spanner refuses at the commit).
    """
    check_sequence_start(conn.dialect, sequence, error)
    if native_exists(conn, sequence):
        if checkfirst:
            return False
        raise SequenceExistsError(
            f"sequence {sequence.name!r} already exists; it was left as it is. Pass "
            "checkfirst=True to make this a no-op"
        )
    sequence.create(conn, checkfirst=False)
    block_holders.forget(native_key(sequence))  # every instance of it in this process
    return True


def drop_native(
    conn: sa.Connection, sequence: sa.Sequence, *, checkfirst: bool, error: type[SeqKeysError]
) -> bool:
    """``DROP SEQUENCE``: True; where there is none, False with ``checkfirst``, else raise.

    The server's refusals are the caller's to map (``drop_refusals`` around the
    whole transaction).
    """
    if not native_exists(conn, sequence):
        if checkfirst:
            return False
        raise SequenceNotFoundError(
            f"there is no sequence {sequence.name!r} to drop. Pass checkfirst=True to make "
            "this a no-op"
        )
    sequence.drop(conn, checkfirst=False)
    block_holders.forget(native_key(sequence))
    return True


class SequenceContract:
    """The part of the sequence contract that is the same for every class.

    A subclass has ``name``, ``create``, ``drop``, ``next_value`` and
    ``next_values``; this adds their awaitable twins (the sync code in
    SQLAlchemy's greenlet, ``sequences._aio``) and :meth:`attach`.
    """

    #: the key of ``MetaData.info`` where attach() lists the sequence (for Alembic); None: not
    _info_key: ClassVar[str | None] = None
    #: the error class of the subclass's bad arguments
    _error: ClassVar[type[SeqKeysError]] = SeqKeysError

    name: str

    if TYPE_CHECKING:

        def create(self, bind: sa.Engine | sa.Connection, *, checkfirst: bool = False) -> bool: ...
        def drop(self, bind: sa.Engine | sa.Connection, *, checkfirst: bool = False) -> bool: ...
        def next_value(self, bind: sa.Engine | sa.Connection) -> int: ...
        def next_values(self, bind: sa.Engine | sa.Connection, n: int) -> list[int]: ...

    async def create_async(
        self, bind: AsyncEngine | AsyncConnection, *, checkfirst: bool = False
    ) -> bool:
        """Awaitable :meth:`create`: an AsyncEngine commits, an AsyncConnection joins.

        :param bind: an ``AsyncEngine``, or an ``AsyncConnection`` whose transaction it joins.
        :param checkfirst: leave an existing sequence as it is and return False.

        Example::

            await order_id.create_async(async_engine, checkfirst=True)
        """
        return await _aio.on_engine(bind, "create", self.create, checkfirst=checkfirst)

    async def drop_async(
        self, bind: AsyncEngine | AsyncConnection, *, checkfirst: bool = False
    ) -> bool:
        """Awaitable :meth:`drop`: an AsyncEngine commits, an AsyncConnection joins.

        :param bind: an ``AsyncEngine``, or an ``AsyncConnection`` whose transaction it joins.
        :param checkfirst: make a missing sequence a no-op that returns False.

        Example::

            await order_id.drop_async(async_engine, checkfirst=True)
        """
        return await _aio.on_engine(bind, "drop", self.drop, checkfirst=checkfirst)

    async def next_value_async(self, bind: AsyncEngine | AsyncConnection) -> int:
        """Awaitable :meth:`next_value`: an AsyncEngine as an Engine, an AsyncConnection joins.

        :param bind: an ``AsyncEngine``, or an ``AsyncConnection`` whose transaction it joins.

        Example::

            await order_id.next_value_async(async_engine)
        """
        return await _aio.on_engine(bind, "next_value", self.next_value)

    async def next_values_async(self, bind: AsyncEngine | AsyncConnection, n: int) -> list[int]:
        """Awaitable :meth:`next_values`: ``n`` distinct keys.

        :param bind: an ``AsyncEngine``, or an ``AsyncConnection`` whose transaction it joins.
        :param n: how many keys, 0 or more.

        Example::

            await order_id.next_values_async(async_engine, 3)
        """
        return await _aio.on_engine(bind, "next_values", self.next_values, n)

    def attach(self, metadata: sa.MetaData) -> None:
        """Create and drop the sequence with ``metadata.create_all`` / ``drop_all``.

        The constructor's ``metadata=`` calls it. ``create_all`` creates it
        after the tables (so a sequences table declared in the same metadata
        exists by then), ``drop_all`` drops it before them; both honour their
        ``checkfirst``.

        :param metadata: the ``MetaData`` whose ``create_all`` and ``drop_all`` include it.

        Example::

            order_id.attach(Base.metadata)   # or metadata=Base.metadata
        """
        check_instance(metadata, sa.MetaData, "metadata", self._error)

        def after_create(target: sa.MetaData, connection: sa.Connection, **kw: Any) -> None:
            if isinstance(connection, MockConnection):  # create_mock_engine: the DDL only
                for statement in self._create_statements(connection.dialect, target):
                    connection.execute(statement)
                return
            made = {t.key for t in kw.get("tables", ())}  # the tables this create_all made
            self._create_attached(connection, made, checkfirst=bool(kw.get("checkfirst", True)))

        def before_drop(target: sa.MetaData, connection: sa.Connection, **kw: Any) -> None:
            if isinstance(connection, MockConnection):
                for statement in self._drop_statements(connection.dialect):
                    connection.execute(statement)
                return
            dropping = {t.key for t in kw.get("tables", ())}  # the tables it drops next
            self._drop_attached(connection, dropping, checkfirst=bool(kw.get("checkfirst", True)))

        if self._info_key is not None:
            metadata.info.setdefault(self._info_key, {})[self.name] = self  # for Alembic
        event.listen(metadata, "after_create", after_create)
        event.listen(metadata, "before_drop", before_drop)

    # -- what attach runs; a subclass may do more (e.g. create the sequences table) --

    def _create_attached(self, conn: sa.Connection, made: set[str], *, checkfirst: bool) -> None:
        """After ``create_all``, which has just made the tables ``made`` (their keys)."""
        self.create(conn, checkfirst=checkfirst)

    def _drop_attached(self, conn: sa.Connection, dropping: set[str], *, checkfirst: bool) -> None:
        """Before ``drop_all``, which drops the tables ``dropping`` (their keys) next."""
        self.drop(conn, checkfirst=checkfirst)

    def _create_statements(self, dialect: sa.Dialect, metadata: sa.MetaData) -> list[Any]:
        """What :meth:`create` runs on ``dialect``, as statements (for a mock engine)."""
        return []

    def _drop_statements(self, dialect: sa.Dialect) -> list[Any]:
        """What :meth:`drop` runs on ``dialect``, as statements (for a mock engine)."""
        return []


class NativeOrRowSequence(SequenceContract):
    """A native ``CREATE SEQUENCE`` where the engine has one, else a row of the sequences table.

    What :class:`~sqlalchemy_seqkeys.PooledSequence` and
    :class:`~sqlalchemy_seqkeys.BitReversedSequence` share: ``create`` and
    ``drop``, the statements a mock engine gets (``create_all`` offline), and
    the check of the names the engine's sequences can hold. A subclass says
    where it is native (``_native``), which row stands in elsewhere
    (``_row``), and forgets the blocks it holds (``_forget_all``).
    """

    sequence: sa.Sequence
    table: str
    start: int
    schema: str | None

    def _place(self, schema: str | None, table: str, metadata: sa.MetaData | None) -> None:
        """Check and keep where it lives: the native sequence's ``schema``, else a row of
        ``table``; ``metadata`` is checked here, attached by the subclass once it is built."""
        check_name(schema, "schema", self._error, nullable=True)
        check_name(table, "table", self._error)
        check_instance(metadata, sa.MetaData, "metadata", self._error, nullable=True)
        self.schema = schema
        self.table = table

    def _native(self, dialect: sa.Dialect) -> bool:
        raise NotImplementedError

    def _row(self) -> TableSequence:
        raise NotImplementedError

    def _forget_all(self) -> None:
        raise NotImplementedError

    def _hold_blocks(self) -> None:
        """Once ``sequence`` is set: forget the blocks when it is created or dropped anew,
        through any instance of it or a migration in this process."""
        block_holders.add(self, native_key(self.sequence))

    def forget_blocks(self) -> None:
        """Forget every block held (``block_holders``): the sequence was created anew."""
        self._forget_all()

    def _create_attached(self, conn: sa.Connection, made: set[str], *, checkfirst: bool) -> None:
        if self._native(conn.dialect):
            self.create(conn, checkfirst=checkfirst)
        else:  # its row, attached as its TableSequence attaches it
            self._row()._create_attached(conn, made, checkfirst=checkfirst)
            self._forget_all()

    def _drop_attached(self, conn: sa.Connection, dropping: set[str], *, checkfirst: bool) -> None:
        if self._native(conn.dialect):
            self.drop(conn, checkfirst=checkfirst)
        else:
            self._row()._drop_attached(conn, dropping, checkfirst=checkfirst)
            self._forget_all()

    def create(self, bind: sa.Engine | sa.Connection, *, checkfirst: bool = False) -> bool:
        """Create the sequence: ``CREATE SEQUENCE``, or (no such sequences) its row.

        True if it was created. Without native sequences the sequences table is
        created first if it is missing. Blocks this process holds are
        forgotten: a sequence created anew hands out its keys afresh.

        :param bind: an Engine (a transaction of its own, committed) or a
            Connection (joins its transaction).
        :param checkfirst: leave an existing sequence as it is and return False.

        Example::

            order_id.create(engine, checkfirst=True)
        """
        check_flag(checkfirst, "checkfirst", self._error)
        with (
            self._refusals(bind, lambda d: create_refusals(self.sequence, d, self._error)),
            _aio.begin(bind, "create") as conn,
        ):
            if self._native(conn.dialect):
                self._check_identifiers(conn.dialect)
                created = create_native(
                    conn, self.sequence, checkfirst=checkfirst, error=self._error
                )
            else:
                sequences_table(sa.MetaData(), self.table).create(conn, checkfirst=True)
                created = self._row().create(conn, checkfirst=checkfirst)
        self._forget_all()
        return created

    def drop(self, bind: sa.Engine | sa.Connection, *, checkfirst: bool = False) -> bool:
        """Drop the sequence (or delete its sequences-table row; the table stays).

        True if there was one to drop.

        :param bind: an Engine (a transaction of its own, committed) or a
            Connection (joins its transaction).
        :param checkfirst: make a missing sequence a no-op that returns False.

        Example::

            order_id.drop(engine, checkfirst=True)
        """
        check_flag(checkfirst, "checkfirst", self._error)
        dropped = False
        with (
            self._refusals(bind, lambda d: drop_refusals(self.sequence, self._error)),
            _aio.begin(bind, "drop") as conn,
        ):
            if self._native(conn.dialect):
                self._check_identifiers(conn.dialect)
                dropped = drop_native(conn, self.sequence, checkfirst=checkfirst, error=self._error)
            elif not checkfirst or sequences_table_exists(conn, self.table):
                dropped = drop_table_sequence(
                    conn, self.name, table=self.table, checkfirst=checkfirst
                )
        self._forget_all()
        return dropped

    def _refusals(
        self, bind: object, refusals: Callable[[sa.Dialect], AbstractContextManager[None]]
    ) -> AbstractContextManager[None]:
        """``refusals(dialect)`` of the native sequence's DDL, around the whole transaction
        (Spanner runs its DDL at the commit); a null context where the sequence is a row."""
        dialect = getattr(bind, "dialect", None)  # a bad bind: _aio.begin says what is wrong
        if dialect is None or not self._native(dialect):
            return contextlib.nullcontext()
        return refusals(dialect)

    def _check_identifiers(self, dialect: sa.Dialect) -> None:
        """Refuse a name the engine's native sequences cannot hold (e.g. too long), with no I/O."""
        check_identifier(dialect, self.name, "sequence name", self._error)
        if self.schema is not None:
            check_identifier(dialect, self.schema, "schema", self._error)

    def _create_statements(self, dialect: sa.Dialect, metadata: sa.MetaData) -> list[Any]:
        """What :meth:`create` runs on ``dialect``, as statements (for a mock engine)."""
        if self._native(dialect):
            check_sequence_start(dialect, self.sequence, self._error)
            return [CreateSequence(self.sequence)]
        return self._row()._create_statements(dialect, metadata)  # its row, as a TableSequence

    def _drop_statements(self, dialect: sa.Dialect) -> list[Any]:
        """What :meth:`drop` runs on ``dialect``, as statements (for a mock engine)."""
        if self._native(dialect):
            return [DropSequence(self.sequence)]
        return self._row()._drop_statements(dialect)
