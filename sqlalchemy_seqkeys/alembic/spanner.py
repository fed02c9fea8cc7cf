"""An Alembic impl for sqlalchemy-spanner's ``spanner+spanner`` dialect.

Alembic looks its per-dialect behaviour up by dialect name, and
sqlalchemy-spanner does not register one. Spanner's DDL is not transactional
(schema changes are batched and applied on their own), so ``transactional_ddl``
is off. The ``seqkeys`` template's ``env.py`` also creates the version table
without a primary key (``version_table_pk=False``), as Spanner needs.

The seqkeys plugin's setup calls :func:`register`.

Example::

    from sqlalchemy_seqkeys.alembic.spanner import SpannerImpl
"""

from __future__ import annotations

from typing import Any

from alembic.ddl.impl import DefaultImpl, _impls

__all__ = ["SpannerImpl", "register"]


class SpannerImpl(DefaultImpl):
    """Alembic's view of Spanner: non-transactional DDL.

    :func:`register` makes it the impl of ``spanner+spanner``, unless the
    application registered its own.

    Example::

        from sqlalchemy_seqkeys.alembic.spanner import SpannerImpl
    """

    transactional_ddl = False


def register() -> None:
    """Register :class:`SpannerImpl` (where no impl is) and patch sqlalchemy-spanner's reflection.

    Example::

        sqlalchemy_seqkeys.alembic.spanner.register()
    """
    if "spanner+spanner" not in _impls:  # else somebody registered one first; keep theirs
        SpannerImpl.__dialect__ = "spanner+spanner"
        _impls["spanner+spanner"] = SpannerImpl
    _patch_reflection()


def _patch_reflection() -> None:
    """Two gaps in sqlalchemy-spanner's reflection that Alembic's autogenerate falls into.

    Reflecting no tables at all must not be a syntax error: sqlalchemy-spanner
    builds ``WHERE (...)`` from the table names it is asked about; for an empty
    list (Alembic asks that of an empty database) that is ``WHERE () AND``,
    which Spanner rejects. An empty list now matches nothing.
    """
    try:
        from google.cloud.sqlalchemy_spanner.sqlalchemy_spanner import SpannerDialect
    except ImportError:  # pragma: no cover - the spanner extra is not installed
        return
    original = SpannerDialect._get_table_filter_query
    if getattr(original, "_seqkeys_patched", False):
        return

    def table_filter(
        self: Any, filter_names: Any, info_schema_table: str, append_query: bool = False
    ) -> str:
        if filter_names is not None and len(filter_names) == 0:
            return "FALSE AND " if append_query else "FALSE "
        text: str = original(self, filter_names, info_schema_table, append_query)
        return text

    table_filter._seqkeys_patched = True  # type: ignore[attr-defined]
    SpannerDialect._get_table_filter_query = table_filter

    # A reflected primary key has a "name" (None where there is none, as on
    # Spanner): SQLAlchemy's contract, which Alembic's comparison relies on.
    original_pk = SpannerDialect.get_multi_pk_constraint

    def multi_pk_constraint(self: Any, *args: Any, **kw: Any) -> Any:
        found = original_pk(self, *args, **kw)
        for constraint in found.values():
            constraint.setdefault("name", None)
        return found

    SpannerDialect.get_multi_pk_constraint = multi_pk_constraint
