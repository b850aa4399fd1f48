from django.contrib import admin
from django.urls import include, path

# The health probes (/livez, /readyz, /healthz, /workerz) are answered by the
# first middleware, tictactoe_site.health, before any of these.
urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("accounts.urls")),
    # The language menu posts to set_language (no language prefix in URLs).
    path("i18n/", include("django.conf.urls.i18n")),
    path("", include("games.urls")),
]

handler400 = "games.errors.bad_request"
handler403 = "games.errors.permission_denied"
handler404 = "games.errors.not_found"
handler500 = "games.errors.server_error"
# allauth's limits answer with this page (allauth looks it up by this name).
handler429 = "accounts.refusals.too_many_requests"
