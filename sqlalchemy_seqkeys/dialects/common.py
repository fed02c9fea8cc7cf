"""An engine this library has no module for: the SQL standard's forms, nothing assumed."""

from __future__ import annotations

from sqlalchemy_seqkeys.comb import CombLayout
from sqlalchemy_seqkeys.dialects import DialectFacts

FACTS = DialectFacts(guid_order=CombLayout.AS_STRING)
