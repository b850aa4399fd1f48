"""Method decorators that answer a wrong method with a readable 405 page.

Not Django's require_http_methods: it answers with an empty body, and every
refusal of this site's pages says what to do instead (/healthz, for machines,
keeps Django's require_safe).
"""

from functools import wraps

from django.utils.translation import gettext, gettext_lazy, pgettext

from .error_pages import error_page

# A hint is a lazy translation (or any text), read when the page is answered.
GAME_BUTTONS_HINT = gettext_lazy("Use the buttons on the game page.")


def allow_methods(*methods: str, hint: str = GAME_BUTTONS_HINT):
    allowed = set(methods) | ({"HEAD"} if "GET" in methods else set())

    def decorator(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if request.method not in allowed:
                allow = ", ".join(sorted(allowed))
                message = gettext("This address only accepts %(methods)s requests.")
                message %= {"methods": allow}
                if "POST" in allowed and hint:
                    message = pgettext(
                        "one sentence after another", "%(first)s %(next)s"
                    ) % {"first": message, "next": str(hint)}
                response = error_page(
                    request,
                    title=gettext("Method not allowed"),
                    message=message,
                    status=405,
                )
                response["Allow"] = allow
                return response
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


get_only = allow_methods("GET")
post_only = allow_methods("POST")
