"""Database URLs as safe to print: the password hidden, wherever the URL gives it.

``URL.render_as_string(hide_password=True)`` hides only ``user:password@``; the
drivers also take a password as a query argument (libpq's ``?password=`` and
``?sslpassword=``, PyMySQL's ``?passwd=``), which it prints as given. Where the
``seqkeys`` commands print a URL: "The seqkeys command" (docs/reference/cli.md).

Also what a connection through a URL cannot do for want of a database (:func:`no_database`).
"""

from __future__ import annotations

import re

import sqlalchemy as sa

__all__ = ["has_password", "names_database", "no_database", "shown", "sqlite_file"]

#: query arguments that carry a password (compared in lower case)
SECRET_QUERY_KEYS = frozenset({"password", "passwd", "sslpassword"})
#: query arguments in which a driver takes the database (PyMySQL's ``database`` and ``db``,
#: libpq's ``dbname``; compared in lower case)
DATABASE_QUERY_KEYS = frozenset({"database", "db", "dbname"})
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


def names_database(url: sa.URL) -> bool:
    """Whether ``url`` names a database: in its path, or as a query argument
    (``database``, ``db``, ``dbname``).

    Example::

        >>> names_database(sa.make_url("mysql+pymysql://app@db/")), names_database(
        ...     sa.make_url("mysql+pymysql://app@db/?database=shop"))
        (False, True)
    """
    return bool(url.database) or any(key.lower() in DATABASE_QUERY_KEYS for key in url.query)


def no_database(conn: sa.Connection) -> str | None:
    """Why no table can be looked up by its name alone through ``conn``; None when one can.

    The connection's URL names no database and its dialect found no default schema when
    the engine first connected (``default_schema_name`` is None: on MySQL and MariaDB no
    database was selected, ``SELECT DATABASE()`` was NULL). SQLAlchemy's MySQL
    reflection then fails on every table without a schema (an ``AssertionError``), and
    the server refuses every statement on one ("No database selected"); a database
    selected later (``USE``, in a connect listener) is not seen by the dialect. A URL
    that names its database is never refused: PostgreSQL with no schema of its
    ``search_path`` still looks tables up.

    :param conn: a connection; its engine has connected, so its dialect knows.
    :returns: the URL (password hidden), that it names no database, and the same URL with
      ``DBNAME`` where the database goes.
    """
    url = conn.engine.url
    if conn.dialect.default_schema_name is not None or names_database(url):
        return None
    return f"{shown(url)} names no database; add one: {shown(url.set(database='DBNAME'))}"
