"""An Alembic impl for sqlalchemy-spanner's ``spanner+spanner`` dialect, which has none.

Alembic looks its per-dialect behaviour up by dialect name. :class:`SpannerImpl` turns
``transactional_ddl`` off: Spanner's schema changes are batched and applied on their own,
and patches two gaps of sqlalchemy-spanner's reflection when it is made (so that no Alembic
command imports sqlalchemy-spanner for nothing). The plugin's setup calls :func:`register`.

User guide: docs/alembic.md.
"""

from __future__ import annotations

import sys
from typing import Any

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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # made for a Spanner connection: sqlalchemy-spanner is loaded by now, so
        # patching its reflection costs no import
        patch_spanner_reflection()
        super().__init__(*args, **kwargs)


def register() -> None:
    """Register :class:`SpannerImpl` (where no impl is) and patch sqlalchemy-spanner's reflection.

    Example::

        sqlalchemy_seqkeys.alembic.spanner.register()
    """
    if not alembic_impl_registered("spanner+spanner"):  # else keep the one registered first
        register_alembic_impl("spanner+spanner", SpannerImpl)
    # sqlalchemy-spanner's reflection gaps that Alembic's autogenerate falls into: patched
    # here only if it is loaded already (importing it, and google-cloud-spanner, takes a
    # quarter of a second that every Alembic command would pay); else by SpannerImpl
    if "google.cloud.sqlalchemy_spanner" in sys.modules:
        patch_spanner_reflection()
