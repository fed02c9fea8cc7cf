"""SQLite: CHAR(36)/BLOB GUIDs, 64-bit INTEGER keys, one writer at a time."""

from __future__ import annotations

from sqlalchemy import types as sqltypes

from sqlalchemy_seqkeys.comb import CombLayout
from sqlalchemy_seqkeys.dialects import DialectFacts, GuidStorage

FACTS = DialectFacts(
    display_name="SQLite",
    guid_storage=GuidStorage(text=sqltypes.CHAR(36), binary=sqltypes.LargeBinary(16)),
    guid_order=CombLayout.AS_STRING,
    integer_is_64_bits=True,
    single_writer_lock=True,
    now_ms_sql="CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
)
