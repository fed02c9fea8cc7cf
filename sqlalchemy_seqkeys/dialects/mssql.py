"""SQL Server: ``uniqueidentifier`` GUIDs (compared from their last bytes), ``sys.sequences``."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import mssql

from sqlalchemy_seqkeys.comb import CombLayout
from sqlalchemy_seqkeys.dialects import DialectFacts, GuidStorage, sequence_name_value

_CATALOG = sa.text(
    "SELECT CAST(increment AS BIGINT), CAST(is_cycling AS INT) FROM sys.sequences "
    "WHERE object_id = OBJECT_ID(:name, 'SO')"
)


def read_catalog(conn: sa.Connection, sequence: sa.Sequence) -> tuple[int, bool] | None:
    """``(increment, cycles)`` of ``sequence`` from ``sys.sequences``; None if there is none."""
    row = conn.execute(_CATALOG, {"name": sequence_name_value(conn, sequence)}).first()
    return None if row is None else (int(row[0]), bool(row[1]))


FACTS = DialectFacts(
    display_name="SQL Server",
    guid_storage=GuidStorage(
        text=mssql.UNIQUEIDENTIFIER(as_uuid=True),
        binary=mssql.UNIQUEIDENTIFIER(as_uuid=True),
        text_form="native",
        binary_form="native",
    ),
    guid_order=CombLayout.AT_END,  # uniqueidentifier compares bytes 10-15 first
    read_sequence_catalog=read_catalog,
    identifier_chars=128,
)
