"""Spanner (sqlalchemy-spanner): bit-reversed sequences only, generated shard columns."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from sqlalchemy_seqkeys.dialects import BASE64_BYTES_STORAGE, DialectFacts

#: the emulator refuses GENERATE_ARRAY past 16,000 elements: a statement
#: fetches at most this many (a larger block takes several)
MOST_PER_STATEMENT = 10_000


def sequence_block(sequence: sa.Sequence, n: int) -> sa.Select[Any]:
    """Up to ``n`` values of ``sequence`` in one statement (at most MOST_PER_STATEMENT).

    :param sequence: the native sequence to take the values from.
    :param n: how many values are wanted, 1 or more.
    """
    # GET_NEXT_SEQUENCE_VALUE once per row, skip range applied by Spanner;
    # not given back when the transaction rolls back (checked on the emulator)
    n = min(n, MOST_PER_STATEMENT)
    rows = sa.func.unnest(sa.func.generate_array(1, n)).table_valued("i")
    return sa.select(sequence.next_value()).select_from(rows)


FACTS = DialectFacts(
    display_name="Spanner",
    guid_storage=BASE64_BYTES_STORAGE,
    guid_order=None,  # time order is a write hotspot there: uuid4
    integer_is_64_bits=True,
    bit_reversed_sequences_only=True,
    generates_shard_columns=True,
    sequence_block=sequence_block,
    lease_autocommit=False,
    select_for_update=False,
    now_ms_sql="UNIX_MILLIS(CURRENT_TIMESTAMP())",
    identifier_chars=128,
    identifier_pattern=r"[A-Za-z][A-Za-z0-9_]*",
    identifier_pattern_words="start with an ASCII letter and hold only ASCII letters, digits "
    "and underscores",
)
