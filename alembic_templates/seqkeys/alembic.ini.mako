# Alembic configuration from the sqlalchemy-seqkeys template.

[alembic]
## Alembic reads this file with % interpolation: a % of the directory's path is written %%,
## after the %(here)s that Alembic puts before a path relative to this file.
<%
    here = "%(here)s"
    if script_location.startswith(here):
        location = here + script_location[len(here):].replace("%", "%%")
    else:
        location = script_location.replace("%", "%%")
%>\
script_location = ${location}
# the project directory is on sys.path, so the models module imports
prepend_sys_path = .
path_separator = os

# the database; SEQKEYS_DATABASE_URL, when set, takes precedence
sqlalchemy.url = sqlite:///app.db

# module:attribute of the MetaData that autogenerate compares with the database
seqkeys_target_metadata = models:Base.metadata

[post_write_hooks]

[loggers]
keys = root,sqlalchemy,alembic

[handlers]
keys = console

[formatters]
keys = generic

[logger_root]
level = WARNING
handlers = console
qualname =

[logger_sqlalchemy]
level = WARNING
handlers =
qualname = sqlalchemy.engine

[logger_alembic]
level = INFO
handlers =
qualname = alembic

[handler_console]
class = StreamHandler
args = (sys.stderr,)
level = NOTSET
formatter = generic

[formatter_generic]
format = %(levelname)-5.5s [%(name)s] %(message)s
datefmt = %H:%M:%S
