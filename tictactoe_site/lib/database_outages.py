"""Which database errors are an outage, answered with the readable 503
(tictactoe_site.lib.error_pages) and logged as one, rather than a bug (a 500).

- OperationalError (refused, closed, pool timeout, server shutting down) and
  InterfaceError (connection already closed): the database is away.
- A write refused as read-only (SQLSTATE 25006, "cannot execute INSERT in a
  read-only transaction"): the connection reached a standby, or a primary come
  back as one, during a failover. target_session_attrs=read-write keeps new
  connections off such a server; one made before is `discard`ed, so that the
  pool replaces it with one on the primary.
"""

from django.db import InterfaceError, InternalError, OperationalError, connection

READ_ONLY_SQLSTATE = "25006"  # read_only_sql_transaction


def is_read_only_refusal(exc: BaseException | None) -> bool:
    """Django raises it as InternalError, psycopg's error (with the SQLSTATE)
    as its cause."""
    cause = getattr(exc, "__cause__", None)
    return (
        isinstance(exc, InternalError)
        and getattr(cause, "sqlstate", None) == READ_ONLY_SQLSTATE
    )


def is_outage(exc: BaseException | None) -> bool:
    if isinstance(exc, OperationalError | InterfaceError):
        return True
    return is_read_only_refusal(exc)


def discard() -> None:
    """Close this thread's database connection itself (not back to the pool,
    which drops a closed one), so that the next query connects anew."""
    if connection.connection is not None:
        connection.connection.close()
    connection.close()
