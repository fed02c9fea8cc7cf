"""Oracle: RAW(16) GUIDs, ``all_sequences``, identifiers of 128 bytes."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import oracle

from sqlalchemy_seqkeys.comb import CombLayout
from sqlalchemy_seqkeys.dialects import DialectFacts, GuidStorage, sequence_schema

_CATALOG = sa.text(
    "SELECT increment_by, CASE cycle_flag WHEN 'Y' THEN 1 ELSE 0 END FROM all_sequences "
    "WHERE sequence_owner = COALESCE(:owner, SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA')) "
    "AND sequence_name = :name"
)


def read_catalog(conn: sa.Connection, sequence: sa.Sequence) -> tuple[int, bool] | None:
    """``(increment, cycles)`` of ``sequence`` from ``all_sequences``; None if there is none.

    :param conn: a connection to the database; its ``schema_translate_map`` applies.
    :param sequence: the native sequence, as declared (``sa.Sequence``).
    """
    dialect = conn.dialect
    schema = sequence_schema(conn, sequence)
    params = {
        "owner": None if schema is None else dialect.denormalize_name(schema),
        "name": dialect.denormalize_name(sequence.name),
    }
    row = conn.execute(_CATALOG, params).first()
    return None if row is None else (int(row[0]), bool(row[1]))


FACTS = DialectFacts(
    display_name="Oracle",
    guid_storage=GuidStorage(
        text=oracle.RAW(16),
        binary=oracle.RAW(16),
        text_form="bytes",
        bytes_literal="HEXTORAW('{}')",
    ),
    guid_order=CombLayout.AS_STRING,
    read_sequence_catalog=read_catalog,
    identifier_bytes=128,
)
