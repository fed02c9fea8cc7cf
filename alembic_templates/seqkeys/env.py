"""Alembic environment from the sqlalchemy-seqkeys template.

Alembic loads the seqkeys plugin when it starts (the ``alembic.plugins`` entry
point of sqlalchemy-seqkeys): the seqkeys operations on ``op``, and the
autogenerate comparisons this file enables by naming the plugin in
``autogenerate_plugins``. It compares the MetaData named by
``seqkeys_target_metadata`` in alembic.ini, and runs on SQLite (batch mode),
PostgreSQL, MySQL/MariaDB and Spanner (no primary key on the version table,
non-transactional DDL).

An async driver in the URL (``postgresql+asyncpg://``, ``postgresql+psycopg_async://``,
``sqlite+aiosqlite://``, ``mysql+asyncmy://``, ``mysql+aiomysql://``) is run as
Alembic's async recipe does: an ``AsyncEngine`` on an event loop of its own, the
migrations through ``connection.run_sync``. From code that already runs an event
loop, hand Alembic a connection instead (Alembic's connection-sharing recipe)::

    def upgrade(connection, cfg):
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, "head")

    async with async_engine.begin() as conn:
        await conn.run_sync(upgrade, Config("alembic.ini"))
"""

from __future__ import annotations

import asyncio
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
        # Alembic's own comparisons, and the seqkeys tables, rows and sequences
        "autogenerate_plugins": ["alembic.autogenerate.*", "seqkeys"],
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


def do_run_migrations(connection: sa.Connection) -> None:
    """Run the migrations on a sync Connection (a sync engine's, or an async one's facade)."""
    if connection.dialect.name.startswith("spanner"):
        # Spanner's schema changes are not transactional and wait for no
        # transaction: run each statement as it comes
        connection = connection.execution_options(isolation_level="AUTOCOMMIT")
    context.configure(connection=connection, **options(connection.dialect.name))
    with context.begin_transaction():
        context.run_migrations()


async def run_async_migrations() -> None:
    """Alembic's async recipe: the same migrations, through ``connection.run_sync``."""
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url, poolclass=sa.pool.NullPool)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(do_run_migrations)
    finally:
        await engine.dispose()


def run_migrations_online() -> None:
    """Run the migrations on a connection to the database.

    A connection the caller handed over (``config.attributes["connection"]``,
    sync, or an async one's facade inside ``run_sync``) is used as it is. An
    async driver in the URL is detected from its dialect (``is_async``) and run
    on an event loop of its own; from a thread whose loop is running, that is
    refused with what to do instead.
    """
    connection = config.attributes.get("connection")
    if connection is not None:
        do_run_migrations(connection)
        return
    if not getattr(sa.engine.make_url(url).get_dialect(), "is_async", False):
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        try:
            with engine.connect() as connection:
                do_run_migrations(connection)
        finally:
            engine.dispose()
        return
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop in this thread: the usual `alembic upgrade head`
        asyncio.run(run_async_migrations())
        return
    raise RuntimeError(
        f"alembic was run with an async URL ({sa.engine.make_url(url).drivername}) from a "
        "thread whose event loop is running, where it cannot start a loop of its own; "
        "hand it a connection instead: await conn.run_sync(upgrade, cfg) with "
        "cfg.attributes['connection'] set inside upgrade (Alembic's connection-sharing "
        "recipe), or run it in another thread (await asyncio.to_thread(command.upgrade, "
        "cfg, 'head'))"
    )


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
