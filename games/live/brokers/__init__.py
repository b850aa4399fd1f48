"""How a change travels between server processes, one module per broker:
Redis pub/sub when REDIS_URL is set (redis_pubsub), else PostgreSQL's
LISTEN/NOTIFY (postgres_notify), else, with a SQLite file, datagrams to a Unix
socket per process (datagrams), and with an in-memory database straight to
this process's hub (in_process). Each holds its publishing side (request
threads, after commit) and, but in_process, its listening side (a task on the
server's event loop that hands what it hears to the hub).
games.live.publish picks the broker, games.live.hub.Hub.start the listener.
"""
