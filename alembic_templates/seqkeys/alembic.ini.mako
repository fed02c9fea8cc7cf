# Alembic configuration from the sqlalchemy-seqkeys template.

[alembic]
script_location = ${script_location}
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
