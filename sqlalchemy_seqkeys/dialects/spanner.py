"""Spanner (sqlalchemy-spanner): bit-reversed sequences only, generated shard columns."""

from __future__ import annotations

from sqlalchemy_seqkeys.dialects import BASE64_BYTES_STORAGE, DialectFacts

FACTS = DialectFacts(
    display_name="Spanner",
    guid_storage=BASE64_BYTES_STORAGE,
    guid_order=None,  # time order is a write hotspot there: uuid4
    integer_is_64_bits=True,
    bit_reversed_sequences_only=True,
    generates_shard_columns=True,
    lease_autocommit=False,
    now_ms_sql="UNIX_MILLIS(CURRENT_TIMESTAMP())",
    identifier_chars=128,
    identifier_pattern=r"[A-Za-z][A-Za-z0-9_]*",
    identifier_pattern_words="start with an ASCII letter and hold only ASCII letters, digits "
    "and underscores",
)
