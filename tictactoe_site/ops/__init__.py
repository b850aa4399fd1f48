"""Operations: metrics, logs, request ids, error reports, health."""
