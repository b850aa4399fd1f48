"""Background work: the task worker, its heartbeat, periodic work, the mail queue."""
