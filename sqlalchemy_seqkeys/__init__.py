"""sqlalchemy-seqkeys: primary-key strategies for SQLAlchemy 2.x without write hotspots.

Pick a strategy per table and declare it as the key column's default, e.g.
``mapped_column(CombGuid(), primary_key=True, default=new_comb_guid)``; every public
name is importable from ``sqlalchemy_seqkeys``. Which strategy suits which engine:
docs/choosing.md (the README's table).

Reference: docs/reference/index.md.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from types import ModuleType as _ModuleType
from typing import TYPE_CHECKING, Any

from . import _columns  # noqa: F401 - installs the key-column checks (they import nothing)
from . import errors as _errors
from .errors import *  # noqa: F403 - every error, listed once in errors.__all__

__version__ = "0.2.0"  # the one place: pyproject reads it (tool.hatch.version)

#: every public name but the errors -> the module that defines it, imported at
#: first use (PEP 562): ``import sqlalchemy_seqkeys`` loads no strategy it does
#: not need. A new public name goes here, in ``__all__`` and in the
#: TYPE_CHECKING imports (tests/unit/test_imports.py checks all three agree).
_EXPORTS: dict[str, str] = {
    "BitReversed": "bitreverse",
    "BitReversedSequence": "bitreverse",
    "bit_reversed_sequence": "bitreverse",
    "reverse_bits": "bitreverse",
    "CombLayout": "comb",
    "comb_timestamp": "comb",
    "new_comb": "comb",
    "DoctorFinding": "doctor",
    "DoctorReport": "doctor",
    "doctor": "doctor",
    "doctor_async": "doctor",
    "OpaqueBigint": "opaque",
    "UuidV47": "opaque",
    "PooledSequence": "pooled",
    "pooled_sequence": "pooled",
    "resync_pooled_sequence": "pooled",
    "resync_pooled_sequence_async": "pooled",
    "SequenceMode": "sequences",
    "TableSequence": "sequences",
    "create_table_sequence": "sequences",
    "create_table_sequence_async": "sequences",
    "drop_table_sequence": "sequences",
    "drop_table_sequence_async": "sequences",
    "resync_table_sequence": "sequences",
    "resync_table_sequence_async": "sequences",
    "sequences_table": "sequences",
    "ServerUuid": "server_keys",
    "server_uuid": "server_keys",
    "ShardId": "shard",
    "farm_fingerprint": "shard",
    "fill_shard_columns": "shard",
    "shard_of": "shard",
    "spanner_shard_column": "shard",
    "spanner_string": "shard",
    "DecodedSnowflake": "layout",
    "ClockBackwardsMode": "snowflake",
    "Snowflake": "snowflake",
    "SnowflakeLayout": "layout",
    "rotate_digits": "snowflake",
    "unrotate_digits": "snowflake",
    "comb_bounds": "timerange",
    "snowflake_bounds": "timerange",
    "uuid7_bounds": "timerange",
    "TypeID": "typeid",
    "TypeIDDefault": "typeid",
    "new_typeid": "typeid",
    "typeid_default": "typeid",
    "TypeIDType": "typeid_sql",
    "CombGuid": "types",
    "CombGuidDefault": "types",
    "new_comb_guid": "types",
    "UnsignedBigInteger": "unsigned",
    "new_uuid7": "uuid7",
    "uuid7_timestamp": "uuid7",
    "ServerUuid7": "uuid7_sql",
    "server_uuid7": "uuid7_sql",
    "AsyncWorkerLease": "workers",
    "WorkerLease": "workers",
    "workers_table": "workers",
}

if TYPE_CHECKING:  # what mypy and IDEs see: the real names
    from .bitreverse import BitReversed, BitReversedSequence, bit_reversed_sequence, reverse_bits
    from .comb import CombLayout, comb_timestamp, new_comb
    from .doctor import DoctorFinding, DoctorReport, doctor, doctor_async
    from .layout import DecodedSnowflake, SnowflakeLayout
    from .opaque import OpaqueBigint, UuidV47
    from .pooled import (
        PooledSequence,
        pooled_sequence,
        resync_pooled_sequence,
        resync_pooled_sequence_async,
    )
    from .sequences import (
        SequenceMode,
        TableSequence,
        create_table_sequence,
        create_table_sequence_async,
        drop_table_sequence,
        drop_table_sequence_async,
        resync_table_sequence,
        resync_table_sequence_async,
        sequences_table,
    )
    from .server_keys import ServerUuid, server_uuid
    from .shard import (
        ShardId,
        farm_fingerprint,
        fill_shard_columns,
        shard_of,
        spanner_shard_column,
        spanner_string,
    )
    from .snowflake import ClockBackwardsMode, Snowflake, rotate_digits, unrotate_digits
    from .timerange import comb_bounds, snowflake_bounds, uuid7_bounds
    from .typeid import TypeID, TypeIDDefault, new_typeid, typeid_default
    from .typeid_sql import TypeIDType
    from .types import CombGuid, CombGuidDefault, new_comb_guid
    from .unsigned import UnsignedBigInteger
    from .uuid7 import new_uuid7, uuid7_timestamp
    from .uuid7_sql import ServerUuid7, server_uuid7
    from .workers import AsyncWorkerLease, WorkerLease, workers_table

__all__ = [
    "AsyncWorkerLease",
    "BitReversed",
    "BitReversedSequence",
    "ClockBackwardsMode",
    "CombGuid",
    "CombGuidDefault",
    "CombLayout",
    "DecodedSnowflake",
    "DoctorFinding",
    "DoctorReport",
    "OpaqueBigint",
    "PooledSequence",
    "SequenceMode",
    "ServerUuid",
    "ServerUuid7",
    "ShardId",
    "Snowflake",
    "SnowflakeLayout",
    "TableSequence",
    "TypeID",
    "TypeIDDefault",
    "TypeIDType",
    "UnsignedBigInteger",
    "UuidV47",
    "WorkerLease",
    "__version__",
    "bit_reversed_sequence",
    "comb_bounds",
    "comb_timestamp",
    "create_table_sequence",
    "create_table_sequence_async",
    "doctor",
    "doctor_async",
    "drop_table_sequence",
    "drop_table_sequence_async",
    "farm_fingerprint",
    "fill_shard_columns",
    "new_comb",
    "new_comb_guid",
    "new_typeid",
    "new_uuid7",
    "pooled_sequence",
    "resync_pooled_sequence",
    "resync_pooled_sequence_async",
    "resync_table_sequence",
    "resync_table_sequence_async",
    "reverse_bits",
    "rotate_digits",
    "sequences_table",
    "server_uuid",
    "server_uuid7",
    "shard_of",
    "snowflake_bounds",
    "spanner_shard_column",
    "spanner_string",
    "typeid_default",
    "unrotate_digits",
    "uuid7_bounds",
    "uuid7_timestamp",
    "workers_table",
]
# every error, from the one list of them (errors.__all__)
__all__ += _errors.__all__


#: old public names -> (module, the new name): they work for one more minor version
#: and warn on every use (not cached, not in __all__)
_DEPRECATED: dict[str, tuple[str, str]] = {
    "UuidV7": ("uuid7_sql", "ServerUuid7"),
    "uuidv7": ("uuid7_sql", "server_uuid7"),
    "comb_guid": ("types", "new_comb_guid"),
}


def __getattr__(name: str) -> Any:
    if name in _DEPRECATED:
        module_name, new = _DEPRECATED[name]
        warnings.warn(
            f"sqlalchemy_seqkeys.{name} is deprecated since 0.3 and goes away in 0.4; "
            f"use sqlalchemy_seqkeys.{new} instead (the same object)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(f".{module_name}", __name__), new)
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Package(_ModuleType):
    """Keeps a public name that is also a submodule's (``doctor``) the public object.

    Importing ``sqlalchemy_seqkeys.doctor`` sets the package's ``doctor`` to
    the module; the function stays what ``sqlalchemy_seqkeys.doctor`` is.
    (Only names from other modules here: a submodule ``types`` would shadow
    the standard module's name.)
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, _ModuleType) and name in _EXPORTS:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
