"""Benchmarks behind ``seqkeys bench NAME``; each reports ratios to a baseline of the same run.

Machines are noisy, so no benchmark prints a bare rate without the rate of its
baseline measured in the same process minutes apart at most::

    $ seqkeys bench comb-generate
    $ seqkeys bench insert --url postgresql+psycopg://postgres@127.0.0.1/test --rows 1000000
    $ seqkeys bench report --out .     # all of them on every engine: BENCHMARKS.md + plots
"""

from __future__ import annotations

from ._table import Table, format_table

__all__ = ["Table", "format_table"]
