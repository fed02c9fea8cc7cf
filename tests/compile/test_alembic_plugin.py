"""The seqkeys Alembic plugin: its entry point, its setup, opting in to its autogenerate.

- pyproject.toml publishes ``sqlalchemy_seqkeys.alembic.plugin`` in Alembic's
  ``alembic.plugins`` group as ``seqkeys``; the module has ``setup(plugin)``.
- ``import sqlalchemy_seqkeys.alembic`` registers nothing by itself (checked in
  a fresh interpreter that cannot see the entry point); ``register()`` does,
  once, however often it is called.
- Autogenerate proposes seqkeys objects where ``autogenerate_plugins`` names
  ``seqkeys``, and leaves them to the user where it does not.
- What autogenerate writes for every operation, to the letter.
(The installed wheel, entry point and all, is tests/test_packaging.py's.)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa
from alembic.autogenerate import produce_migrations, render_python_code
from alembic.migration import MigrationContext
from alembic.operations import Operations, ops
from alembic.runtime.plugins import Plugin

import sqlalchemy_seqkeys.alembic
from sqlalchemy_seqkeys import TableSequence
from sqlalchemy_seqkeys.alembic import plugin
from sqlalchemy_seqkeys.alembic.pooled_ops import (
    CreatePooledSequenceOp,
    DropPooledSequenceOp,
    ResyncPooledSequenceOp,
)

ROOT = Path(__file__).parent.parent.parent
PLUGINS = ["alembic.autogenerate.*", "seqkeys"]


def test_the_entry_point_names_the_plugin_module() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    section = pyproject.split('[project.entry-points."alembic.plugins"]\n')[1].split("\n[")[0]
    entries = [line for line in section.splitlines() if line and not line.startswith("#")]
    assert entries == ['seqkeys = "sqlalchemy_seqkeys.alembic.plugin"']
    assert plugin.NAME == "seqkeys"
    assert callable(plugin.setup)


def test_importing_the_package_registers_nothing() -> None:
    # a fresh interpreter whose entry points hold no alembic plugin (as an
    # uninstalled checkout): the import alone leaves op without the operations
    script = (
        "import importlib.metadata as m\n"
        "real = m.entry_points\n"
        "m.entry_points = lambda **kw: [] if kw.get('group') == 'alembic.plugins' "
        "else real(**kw)\n"
        "import sqlalchemy_seqkeys.alembic\n"
        "from alembic.operations import Operations\n"
        "print(hasattr(Operations, 'create_table_sequence'))\n"
        "sqlalchemy_seqkeys.alembic.register()\n"
        "print(hasattr(Operations, 'create_table_sequence'))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["False", "True"]


def test_register_is_idempotent() -> None:
    sqlalchemy_seqkeys.alembic.register()
    set_up = list(plugin._set_up)
    sqlalchemy_seqkeys.alembic.register()
    assert plugin._set_up == set_up
    assert hasattr(Operations, "create_pooled_sequence")


def test_setup_gives_a_plugin_the_comparators() -> None:
    sqlalchemy_seqkeys.alembic.register()
    other = Plugin("seqkeys_test_second_name")
    try:
        plugin.setup(other)  # registering the operations again would raise: it does not
        registered = [
            fn for fns in other.autogenerate_comparators._registry.values() for fn, _ in fns
        ]
        assert len(registered) == len(plugin.COMPARATORS)
    finally:
        other.remove()
        plugin._set_up.remove(other)


def _autogenerate(plugins: list[str] | None) -> list[str]:
    metadata = sa.MetaData()
    sa.Table(
        "t",
        metadata,
        sa.Column(
            "id", sa.BigInteger, primary_key=True, default=TableSequence("t_id", mode="batch")
        ),
    )
    sqlalchemy_seqkeys.alembic.register()
    engine = sa.create_engine("sqlite://")
    with engine.connect() as conn:
        opts: dict[str, object] = {"target_metadata": metadata}
        if plugins is not None:
            opts["autogenerate_plugins"] = plugins
        migration = produce_migrations(MigrationContext.configure(conn, opts=opts), metadata)
    assert migration.upgrade_ops is not None
    return [type(op).__name__ for op in migration.upgrade_ops.ops]


def test_autogenerate_proposes_seqkeys_objects_where_env_py_names_the_plugin() -> None:
    assert _autogenerate(PLUGINS) == [
        "CreateTableOp",
        "CreateSequencesTableOp",
        "CreateTableSequenceOp",
    ]


def test_autogenerate_leaves_them_where_env_py_does_not() -> None:
    assert _autogenerate(None) == ["CreateTableOp"]
    assert _autogenerate(["alembic.autogenerate.*"]) == ["CreateTableOp"]


def test_what_autogenerate_writes_for_every_operation() -> None:
    sqlalchemy_seqkeys.alembic.register()
    a = sqlalchemy_seqkeys.alembic
    upgrade = [
        a.CreateSequencesTableOp(),
        a.CreateSequencesTableOp("my_sequences"),
        a.CreateTableSequenceOp("invoice_no", 1000),
        a.CreateTableSequenceOp("invoice_no", 1, "my_sequences"),
        a.CreateBitReversedSequenceOp("order_id", 1, (1, 5000)),
        a.CreateBitReversedSequenceOp("order_id", 3, None, "my_sequences"),
        a.CreateWorkerLeaseTableOp(),
        a.CreateWorkerLeaseTableOp("my_workers"),
        a.MakeSequenceNamesCaseSensitiveOp(),
        a.MakeSequenceNamesCaseSensitiveOp("my_sequences"),
        a.UpgradeWorkerLeaseTableOp(),
        a.UpgradeWorkerLeaseTableOp("my_workers"),
        a.ResyncTableSequenceOp("invoice_no", "invoices", "id", "s", "my_sequences"),
        CreatePooledSequenceOp("p", 50),
        CreatePooledSequenceOp("p", 20, 7, "s", "my_sequences"),
        ResyncPooledSequenceOp("p", "orders", "id", None, "seq_schema"),
    ]
    code = render_python_code(ops.UpgradeOps(ops=upgrade))
    assert [line.strip() for line in code.splitlines() if line.strip().startswith("op.")] == [
        "op.create_sequences_table()",
        "op.create_sequences_table('my_sequences')",
        "op.create_table_sequence('invoice_no', start=1000)",
        "op.create_table_sequence('invoice_no', start=1, table='my_sequences')",
        "op.create_bit_reversed_sequence('order_id', start_with_counter=1, skip_range=(1, 5000))",
        "op.create_bit_reversed_sequence('order_id', start_with_counter=3, table='my_sequences')",
        "op.create_worker_lease_table()",
        "op.create_worker_lease_table('my_workers')",
        "op.make_sequence_names_case_sensitive()",
        "op.make_sequence_names_case_sensitive('my_sequences')",
        "op.upgrade_worker_lease_table()",
        "op.upgrade_worker_lease_table(table='my_workers')",
        "op.resync_table_sequence('invoice_no', 'invoices', 'id', schema='s', "
        "sequences_table='my_sequences')",
        "op.create_pooled_sequence('p', 50)",
        "op.create_pooled_sequence('p', 20, start=7, schema='s', table='my_sequences')",
        "op.resync_pooled_sequence('p', 'orders', 'id', sequence_schema='seq_schema')",
    ]
    reverses = [op.reverse() for op in upgrade if not op.op_name.startswith("resync")]
    down = render_python_code(ops.UpgradeOps(ops=reverses))
    assert [line.strip() for line in down.splitlines() if line.strip().startswith("op.")] == [
        "op.drop_sequences_table()",
        "op.drop_sequences_table('my_sequences')",
        "op.drop_table_sequence('invoice_no', start=1000)",
        "op.drop_table_sequence('invoice_no', start=1, table='my_sequences')",
        "op.drop_bit_reversed_sequence('order_id', start_with_counter=1, skip_range=(1, 5000))",
        "op.drop_bit_reversed_sequence('order_id', start_with_counter=3, table='my_sequences')",
        "op.drop_worker_lease_table()",
        "op.drop_worker_lease_table('my_workers')",
        "op.make_sequence_names_case_insensitive()",
        "op.make_sequence_names_case_insensitive('my_sequences')",
        "op.downgrade_worker_lease_table()",
        "op.downgrade_worker_lease_table(table='my_workers')",
        "op.drop_pooled_sequence('p', 50)",
        "op.drop_pooled_sequence('p', 20, start=7, schema='s', table='my_sequences')",
    ]
    assert isinstance(upgrade[-2].reverse(), DropPooledSequenceOp)
    # the plugin registers the operations; the package's name is for the types it renders
    assert "import sqlalchemy_seqkeys.alembic" not in code
