"""The site's URLs plus `/failing/` (route "failing"), a page that raises as a
bug would (tests/support/failing_settings.py)."""

from django.contrib.auth.decorators import login_required
from django.urls import include, path


class Bug(Exception):
    """What the failing page raises."""


@login_required  # as every page of a player: the user is known
def failing(request):
    raise Bug("a page that fails, for the tests")


urlpatterns = [
    path("failing/", failing, name="failing"),
    path("", include("tictactoe_site.urls")),
]
