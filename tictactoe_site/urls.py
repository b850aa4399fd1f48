from django.contrib import admin
from django.urls import include, path

from .health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("", include("games.urls")),
]

handler400 = "games.errors.bad_request"
handler403 = "games.errors.permission_denied"
handler404 = "games.errors.not_found"
handler500 = "games.errors.server_error"
