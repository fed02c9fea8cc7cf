"""``python -m sqlalchemy_seqkeys``: the same as the ``seqkeys`` command."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
