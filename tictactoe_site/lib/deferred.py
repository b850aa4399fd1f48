"""Work a page hands off to run after its response has been sent.

A page may have something to write that the reader need not wait for (a
player's "last seen": accounts.middleware). Behind the site's server
(tictactoe_site.server.bridge) the request's environ carries, under `DEFER`, a
function that queues such work for a page thread once the response is out: a
page that runs on the event loop then never waits for the database's write
lock. Anywhere else (tests, a plain WSGI server) the work runs at once.
"""

from collections.abc import Callable

# The environ key (request.META) of the function that runs work after the
# response: the bridge sets it, `defer` reads it.
DEFER = "tictactoe.defer"


def defer(request, work: Callable[[], object]) -> None:
    """Run `work` (no arguments) after the response, or now without a server
    that offers it."""
    run_later = request.META.get(DEFER)
    if run_later is None:
        work()
    else:
        run_later(work)
