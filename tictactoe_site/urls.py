from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("games.urls")),
]

handler400 = "games.errors.bad_request"
handler403 = "games.errors.permission_denied"
handler404 = "games.errors.not_found"
