"""The health probes' paths (answered by tictactoe_site.health) and the logging
filter that keeps their 503s out of Django's request log. Imported while the
settings load (LOGGING), so nothing here touches models."""

import logging

PATHS = frozenset({"/livez", "/readyz", "/healthz", "/workerz"})


class NotAProbe(logging.Filter):
    """Drops django.request's ERROR line for a probe's 503: a load balancer
    probes every few seconds, and the probe's own warning already says why."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        return getattr(request, "path_info", None) not in PATHS
