"""Database URLs as safe to print: the password hidden, wherever the URL gives it.

``URL.render_as_string(hide_password=True)`` hides only ``user:password@``; the
drivers also take a password as a query argument (libpq's ``?password=`` and
``?sslpassword=``, PyMySQL's ``?passwd=``), which it prints as given. Where the
``seqkeys`` commands print a URL: "The seqkeys command" (docs/reference/cli.md).
"""

from __future__ import annotations

import re

import sqlalchemy as sa

__all__ = ["has_password", "shown", "sqlite_file"]

#: query arguments that carry a password (compared in lower case)
SECRET_QUERY_KEYS = frozenset({"password", "passwd", "sslpassword"})
_MASK = "***"
_MASKED_VALUE = re.compile(r"=%2A%2A%2A(?=&|$)")  # quote_plus("***"), as rendered
_TEXT_USERINFO = re.compile(r"(://[^/?#@:]*:)[^/?#@]*@")
_TEXT_QUERY = re.compile(r"([?&](?:password|passwd|sslpassword)=)[^&#]*", re.IGNORECASE)


def _parsed(url: sa.URL | str) -> sa.URL | None:
    if isinstance(url, sa.URL):
        return url
    try:
        return sa.make_url(url)
    except (sa.exc.ArgumentError, ValueError):
        return None


def has_password(url: sa.URL | str) -> bool:
    """Whether ``url`` gives a password: as ``user:password@`` or as a query argument
    (``password``, ``passwd``, ``sslpassword``)."""
    parsed = _parsed(url)
    if parsed is None:
        text = str(url)
        return bool(_TEXT_USERINFO.search(text) or _TEXT_QUERY.search(text))
    return parsed.password is not None or any(
        key.lower() in SECRET_QUERY_KEYS for key in parsed.query
    )


def shown(url: sa.URL | str) -> str:
    """``url`` as safe to print: its password shown as ``***``, and so the value of each
    query argument that carries one (``password``, ``passwd``, ``sslpassword``).

    A string that is no parseable URL is masked the same way, as text.

    Example::

        >>> shown("postgresql+psycopg://app@db/shop?password=S3CRET&sslmode=require")
        'postgresql+psycopg://app@db/shop?password=***&sslmode=require'
        >>> shown("mysql+pymysql://app:S3CRET@db/shop")
        'mysql+pymysql://app:***@db/shop'
    """
    parsed = _parsed(url)
    if parsed is None:
        return _TEXT_QUERY.sub(rf"\g<1>{_MASK}", _TEXT_USERINFO.sub(rf"\g<1>{_MASK}@", str(url)))
    secret = [key for key in parsed.query if key.lower() in SECRET_QUERY_KEYS]
    if not secret:
        return parsed.render_as_string(hide_password=True)
    masked = parsed.update_query_dict(dict.fromkeys(secret, _MASK))
    return _MASKED_VALUE.sub(f"={_MASK}", masked.render_as_string(hide_password=True))


def sqlite_file(url: sa.URL) -> str | None:
    """The path of the database file a SQLite URL names (``sqlite:///app.db``, or
    ``sqlite:///file:app.db?mode=ro&uri=true``); None for another engine's URL, or for a
    database in memory."""
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    path = url.database
    if str(url.query.get("uri", "")).lower() in ("true", "1"):  # file:path?mode=...
        if "mode=memory" in path:
            return None
        path = path.removeprefix("file:").partition("?")[0]
    return None if not path or path == ":memory:" else path
