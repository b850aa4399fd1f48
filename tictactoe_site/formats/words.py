"""Words of Django and allauth that our catalog says otherwise, marked here so
that `make messages` keeps them in tictactoe_site/locale (LOCALE_PATHS, read
before Django's and allauth's catalogs): the months Brazilian Portuguese writes
in lower case ("2 de dezembro de 2026"), allauth's wrong code in Arabic ("رمز",
the site's word, not "كود"), the email field's label (French "Courriel",
Portuguese "Email" otherwise), and the recovery codes' notice (Spanish "nevos")."""

from django.utils.translation import gettext_noop

MONTHS = (
    gettext_noop("January"),
    gettext_noop("February"),
    gettext_noop("March"),
    gettext_noop("April"),
    gettext_noop("May"),
    gettext_noop("June"),
    gettext_noop("July"),
    gettext_noop("August"),
    gettext_noop("September"),
    gettext_noop("October"),
    gettext_noop("November"),
    gettext_noop("December"),
)
ALLAUTH = (
    gettext_noop("Incorrect code."),
    gettext_noop("Email"),
    gettext_noop("New Recovery Codes Generated"),
)
