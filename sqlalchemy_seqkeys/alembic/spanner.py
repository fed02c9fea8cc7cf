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

from alembic.ddl.impl import DefaultImpl

from sqlalchemy_seqkeys._compat import (
    alembic_impl_registered,
    patch_spanner_reflection,
    register_alembic_impl,
)

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
    if not alembic_impl_registered("spanner+spanner"):  # else keep the one registered first
        register_alembic_impl("spanner+spanner", SpannerImpl)
    # sqlalchemy-spanner's reflection gaps that Alembic's autogenerate falls into
    patch_spanner_reflection()
