"""Table-backed sequences: the ``sequences(name, next_value)`` table and ``TableSequence``.

See :mod:`sqlalchemy_seqkeys.sequences.generators` for the four modes,
:mod:`sqlalchemy_seqkeys.sequences.table` for the table and its allocation, and
:mod:`sqlalchemy_seqkeys.sequences.resync` for moving a sequence past a table's keys.
User guide: docs/strategies/table-sequences.md.
"""

from __future__ import annotations

from .generators import SequenceMode, TableSequence
from .resync import resync_statement, resync_table_sequence, resync_table_sequence_async
from .table import (
    allocate,
    create_table_sequence,
    create_table_sequence_async,
    drop_table_sequence,
    drop_table_sequence_async,
    read_next_value,
    sequences_table,
)

__all__ = [
    "SequenceMode",
    "TableSequence",
    "allocate",
    "create_table_sequence",
    "create_table_sequence_async",
    "drop_table_sequence",
    "drop_table_sequence_async",
    "read_next_value",
    "resync_statement",
    "resync_table_sequence",
    "resync_table_sequence_async",
    "sequences_table",
]
