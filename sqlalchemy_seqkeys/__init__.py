"""sqlalchemy-seqkeys: primary-key strategies for SQLAlchemy 2.x without write hotspots.

Pick a strategy per table and declare it as the key column's default; every
name below is importable from ``sqlalchemy_seqkeys``::

    import uuid
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
    from sqlalchemy_seqkeys import CombGuid, comb_guid

    class Base(DeclarativeBase):
        pass

    class Invoice(Base):
        __tablename__ = "invoices"
        id: Mapped[uuid.UUID] = mapped_column(CombGuid(), primary_key=True, default=comb_guid)

See the README for which strategy suits which engine.
"""

from __future__ import annotations

from . import _columns  # noqa: F401 - installs the key-column checks on import
from . import errors as _errors
from .bitreverse import BitReversed, BitReversedSequence, bit_reversed_sequence, reverse_bits
from .comb import CombLayout, comb_timestamp, new_comb
from .doctor import DoctorFinding, DoctorReport, doctor, doctor_async
from .errors import *  # noqa: F403 - every error, listed once in errors.__all__
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
from .shard import ShardId, farm_fingerprint, shard_of, spanner_shard_column, spanner_string
from .snowflake import (
    DecodedSnowflake,
    Snowflake,
    SnowflakeLayout,
    rotate_digits,
    unrotate_digits,
)
from .timerange import comb_bounds, snowflake_bounds, uuid7_bounds
from .typeid import TypeID, TypeIDDefault, new_typeid, typeid_default
from .typeid_sql import TypeIDType
from .types import CombGuid, CombGuidDefault, comb_guid
from .uuid7 import new_uuid7, uuid7_timestamp
from .uuid7_sql import UuidV7, uuidv7
from .workers import AsyncWorkerLease, WorkerLease, workers_table

__version__ = "0.2.0"  # the one place: pyproject reads it (tool.hatch.version)

__all__ = [
    "AsyncWorkerLease",
    "BitReversed",
    "BitReversedSequence",
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
    "ShardId",
    "Snowflake",
    "SnowflakeLayout",
    "TableSequence",
    "TypeID",
    "TypeIDDefault",
    "TypeIDType",
    "UuidV7",
    "UuidV47",
    "WorkerLease",
    "__version__",
    "bit_reversed_sequence",
    "comb_bounds",
    "comb_guid",
    "comb_timestamp",
    "create_table_sequence",
    "create_table_sequence_async",
    "doctor",
    "doctor_async",
    "drop_table_sequence",
    "drop_table_sequence_async",
    "farm_fingerprint",
    "new_comb",
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
    "shard_of",
    "snowflake_bounds",
    "spanner_shard_column",
    "spanner_string",
    "typeid_default",
    "unrotate_digits",
    "uuid7_bounds",
    "uuid7_timestamp",
    "uuidv7",
    "workers_table",
]
# every error, from the one list of them (errors.__all__)
__all__ += _errors.__all__
