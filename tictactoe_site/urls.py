from django.contrib import admin
from django.urls import include, path

from accounts.views import preferences as preference_views
from tictactoe_site.lib import web_app

# The health probes (/livez, /readyz, /healthz, /workerz) are answered by the
# first middleware, tictactoe_site.ops.health, before any of these.
urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("accounts.urls")),
    # The language menu posts to set_language (no language prefix in URLs): Django's
    # view, which also saves a player's choice (accounts.views.preferences).
    path("i18n/setlang/", preference_views.set_language, name="set_language"),
    # The page tells the site the browser's time zone (static/games/timezone.js).
    path("i18n/timezone/", preference_views.set_time_zone, name="set_time_zone"),
    # The installable app: its manifest, service worker and offline page.
    path("manifest/<str:language>.webmanifest", web_app.manifest, name="web_manifest"),
    path("service-worker.js", web_app.service_worker, name="service_worker"),
    path("offline/<str:language>/", web_app.offline, name="offline_page"),
    path("", include("games.urls")),
]

handler400 = "tictactoe_site.lib.error_pages.bad_request"
handler403 = "tictactoe_site.lib.error_pages.permission_denied"
handler404 = "tictactoe_site.lib.error_pages.not_found"
handler500 = "tictactoe_site.lib.error_pages.server_error"
# allauth's limits answer with this page (allauth looks it up by this name).
handler429 = "accounts.refusals.too_many_requests"
