"""Table-backed sequences: the ``sequences(name, next_value)`` table and ``TableSequence``.

See :mod:`sqlalchemy_seqkeys.sequences.generators` for the four modes and
:mod:`sqlalchemy_seqkeys.sequences.table` for the table and its allocation.
"""

from __future__ import annotations

from .generators import SequenceMode, TableSequence
from .table import (
    allocate,
    create_table_sequence,
    drop_table_sequence,
    read_next_value,
    sequences_table,
)

__all__ = [
    "SequenceMode",
    "TableSequence",
    "allocate",
    "create_table_sequence",
    "drop_table_sequence",
    "read_next_value",
    "sequences_table",
]
