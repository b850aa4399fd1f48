"""Refuse requests that carry NUL bytes before any view sees them.

No address, form field or query parameter of this site has a use for NUL
(U+0000), and PostgreSQL refuses it in text: a NUL that reached a query (the
admin's list filters, for one) would be a 500. A 400 page says so instead.
"""

from django.utils.translation import gettext

from .error_pages import error_page

NUL = "\x00"


def _has_nul(request) -> bool:
    if NUL in request.path_info:
        return True
    sources = [request.GET] + ([request.POST] if request.method == "POST" else [])
    return any(
        NUL in key or any(NUL in value for value in values if isinstance(value, str))
        for source in sources
        for key, values in source.lists()
    )


def reject_nul_bytes(get_response):
    def middleware(request):
        if _has_nul(request):
            return error_page(
                request,
                title=gettext("Bad request"),
                message=gettext(
                    "That request contained a character that is not "
                    "allowed (a NUL byte). Check what you typed and try again."
                ),
                status=400,
            )
        return get_response(request)

    return middleware
