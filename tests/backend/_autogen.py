"""Autogenerate with the seqkeys plugin on a live connection, as ``alembic revision
--autogenerate`` runs it: the rendered upgrade, its ``op.`` lines, and running it."""

from __future__ import annotations

import sqlalchemy as sa
from alembic.autogenerate import produce_migrations, render_python_code
from alembic.migration import MigrationContext
from alembic.operations import Operations

import sqlalchemy_seqkeys.alembic

sqlalchemy_seqkeys.alembic.register()  # where Alembic has not loaded the plugin (not installed)


def autogenerate(op: Operations, models: sa.MetaData) -> str:
    """The upgrade autogenerate writes for ``models`` against ``op``'s database."""
    context = MigrationContext.configure(
        op.get_bind(),
        opts={
            "target_metadata": models,
            "autogenerate_plugins": ["alembic.autogenerate.*", "seqkeys"],
        },
    )
    return render_python_code(produce_migrations(context, models).upgrade_ops)


def op_lines(code: str) -> list[str]:
    """The ``op.`` lines of a rendered upgrade."""
    return [line.strip() for line in code.splitlines() if line.strip().startswith("op.")]


def run(op: Operations, code: str) -> None:
    """Run a rendered upgrade as a migration would."""
    namespace = {"op": op, "sa": sa, "sqlalchemy_seqkeys": sqlalchemy_seqkeys}
    exec("\n".join(line.strip() for line in code.splitlines()), namespace)
