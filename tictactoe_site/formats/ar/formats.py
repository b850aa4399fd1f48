# Arabic date and time: day, month, year, then the time after an Arabic comma
# ("23 أكتوبر 2026، 8:59 م"); Django's ar module has no DATETIME_FORMAT, and
# the English default would read "أكتوبر 23, 2026, 8:59 م".
DATETIME_FORMAT = "j F Y، g:i A"
SHORT_DATETIME_FORMAT = "d‏/m‏/Y، g:i A"
