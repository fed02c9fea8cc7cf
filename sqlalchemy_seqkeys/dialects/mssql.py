"""SQL Server: ``uniqueidentifier`` GUIDs (compared from their last bytes), ``sys.sequences``."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import mssql

from sqlalchemy_seqkeys.comb import CombLayout
from sqlalchemy_seqkeys.dialects import DialectFacts, GuidStorage, read_catalog_by_name

_CATALOG = sa.text(
    "SELECT CAST(increment AS BIGINT), CAST(is_cycling AS INT) FROM sys.sequences "
    "WHERE object_id = OBJECT_ID(:name, 'SO')"
)


def read_catalog(conn: sa.Connection, sequence: sa.Sequence) -> tuple[int, bool] | None:
    """``(increment, cycles)`` of ``sequence`` from ``sys.sequences``; None if there is none.

    :param conn: a connection; the name reaches ``OBJECT_ID`` with its schema
        translated by the connection's ``schema_translate_map``.
    :param sequence: the native sequence, as declared (``sa.Sequence``).
    """
    return read_catalog_by_name(conn, sequence, _CATALOG)


FACTS = DialectFacts(
    display_name="SQL Server",
    guid_storage=GuidStorage.native(mssql.UNIQUEIDENTIFIER(as_uuid=True)),
    guid_order=CombLayout.AT_END,  # uniqueidentifier compares bytes 10-15 first
    read_sequence_catalog=read_catalog,
    identifier_chars=128,
)
