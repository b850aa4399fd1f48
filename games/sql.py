"""Names for the few SQL statements written out by hand, where building them
with the ORM on every call was measured to cost too much: the move's statements
and the records write (games.services), the game page's read (games.models).
Tables and columns are named as the models name them."""

from django.db import connection


def table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def column(model, field: str) -> str:
    """The quoted column of `field` (a name or an attname) of `model`."""
    return connection.ops.quote_name(model._meta.get_field(field).column)


def columns(model, fields, prefix: str = "") -> str:
    return ", ".join(prefix + column(model, field) for field in fields)


def is_storable_pk(model, value) -> bool:
    """Whether `value` can be a primary key of `model`: PostgreSQL refuses a
    statement comparing an integer column with an integer out of its range (the
    ORM returns no rows for such a lookup)."""
    low, high = connection.ops.integer_field_range(model._meta.pk.get_internal_type())
    return isinstance(value, int) and low <= value <= high
