"""Alembic environment from the sqlalchemy-seqkeys template.

Loads the seqkeys operations and autogenerate hooks, compares the MetaData
named by ``seqkeys_target_metadata`` in alembic.ini, and runs on SQLite (batch
mode), PostgreSQL, MySQL/MariaDB and Spanner (no primary key on the version
table, non-transactional DDL).
"""

from __future__ import annotations

import importlib
import os
from logging.config import fileConfig
from typing import Any

import sqlalchemy as sa
from alembic import context

import sqlalchemy_seqkeys.alembic

config = context.config
if config.config_file_name is not None:
    fileConfig(config.config_file_name)


def load_metadata() -> sa.MetaData:
    """The models' MetaData, from ``seqkeys_target_metadata = module:attribute``."""
    target = config.get_main_option("seqkeys_target_metadata", "models:Base.metadata")
    module_name, _, attribute = (target or "").partition(":")
    found: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        found = getattr(found, part)
    if not isinstance(found, sa.MetaData):
        raise TypeError(f"seqkeys_target_metadata = {target} is not a MetaData")
    return found


target_metadata = load_metadata()
url = os.environ.get("SEQKEYS_DATABASE_URL") or config.get_main_option("sqlalchemy.url") or ""


def options(dialect_name: str) -> dict[str, Any]:
    """What every run configures, whatever the engine."""
    return {
        "target_metadata": target_metadata,
        "render_item": sqlalchemy_seqkeys.alembic.render_item,
        "render_as_batch": dialect_name == "sqlite",  # SQLite alters tables by copying them
        "version_table_pk": not dialect_name.startswith("spanner"),
    }


def run_migrations_offline() -> None:
    """``alembic upgrade head --sql``: print the SQL instead of running it."""
    dialect_name = sa.engine.make_url(url).get_dialect().name
    context.configure(
        url=url,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
        **options(dialect_name),
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Run the migrations on a connection to the database."""
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.connect() as connection:
        if connection.dialect.name.startswith("spanner"):
            # Spanner's schema changes are not transactional and wait for no
            # transaction: run each statement as it comes
            connection = connection.execution_options(isolation_level="AUTOCOMMIT")
        context.configure(connection=connection, **options(connection.dialect.name))
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
