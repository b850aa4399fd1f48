"""GET /healthz for load balancers and orchestrators: does the database answer,
and does the background task worker run (its heartbeat, tictactoe_site.worker)?

Deliberately touches neither the session nor the user, so a probe every few
seconds costs one small query and sets no cookie.
"""

import logging

from django.db import DatabaseError
from django.http import HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from .heartbeat import worker_silence

logger = logging.getLogger(__name__)


@require_safe
@never_cache
def healthz(request):
    try:
        silence = worker_silence()
    except DatabaseError as exc:
        logger.warning("health check: the database does not answer: %s", exc)
        return HttpResponse(
            "database unavailable\n", status=503, content_type="text/plain"
        )
    if silence is not None:
        logger.warning("health check: %s", silence)
        return HttpResponse(
            f"task worker unavailable: {silence} (email waits in the queue)\n",
            status=503,
            content_type="text/plain",
        )
    return HttpResponse("ok\n", content_type="text/plain")
