"""SQL Server: ``uniqueidentifier`` GUIDs (compared from their last bytes), ``sys.sequences``."""

from __future__ import annotations

from sqlalchemy.dialects import mssql

from sqlalchemy_seqkeys.comb import CombLayout
from sqlalchemy_seqkeys.dialects import DialectFacts, GuidStorage, catalog_reader

#: ``(increment, cycles)`` of a sequence from ``sys.sequences``; None if there is none
read_catalog = catalog_reader(
    "SELECT CAST(increment AS BIGINT), CAST(is_cycling AS INT) FROM sys.sequences "
    "WHERE object_id = OBJECT_ID(:name, 'SO')",
    "sys.sequences",
)


FACTS = DialectFacts(
    display_name="SQL Server",
    guid_storage=GuidStorage.native(mssql.UNIQUEIDENTIFIER(as_uuid=True)),
    guid_order=CombLayout.AT_END,  # uniqueidentifier compares bytes 10-15 first
    read_sequence_catalog=read_catalog,
    identifier_chars=128,
)
