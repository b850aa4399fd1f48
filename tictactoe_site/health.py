"""GET /healthz for load balancers and orchestrators: is the database answering?

Deliberately touches neither the session nor the user, so a probe every few
seconds costs one trivial query and sets no cookie.
"""

import logging

from django.db import DatabaseError, connection
from django.http import HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

logger = logging.getLogger(__name__)


@require_safe
@never_cache
def healthz(request):
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as exc:
        logger.warning("health check: the database does not answer: %s", exc)
        return HttpResponse(
            "database unavailable\n", status=503, content_type="text/plain"
        )
    return HttpResponse("ok\n", content_type="text/plain")
