"""Method decorators that answer a wrong method with a readable 405 page.

Not Django's require_http_methods: it answers with an empty body, and every
refusal of this site's pages says what to do instead (/healthz, for machines,
keeps Django's require_safe).
"""

from functools import wraps

from django.shortcuts import render

GAME_BUTTONS_HINT = "Use the buttons on the game page."


def allow_methods(*methods: str, hint: str = GAME_BUTTONS_HINT):
    allowed = set(methods) | ({"HEAD"} if "GET" in methods else set())

    def decorator(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if request.method not in allowed:
                allow = ", ".join(sorted(allowed))
                message = f"This address only accepts {allow} requests."
                if "POST" in allowed and hint:
                    message += " " + hint
                response = render(
                    request,
                    "error.html",
                    {"title": "Method not allowed", "message": message},
                    status=405,
                )
                response["Allow"] = allow
                return response
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


get_only = allow_methods("GET")
post_only = allow_methods("POST")
