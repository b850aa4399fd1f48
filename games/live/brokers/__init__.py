"""How a change travels between server processes, one module per broker:
Redis pub/sub when REDIS_URL is set (redis_pubsub), else PostgreSQL's
LISTEN/NOTIFY (postgres_notify), else, with a SQLite file, datagrams to a Unix
socket per process (datagrams); with an in-memory database there is none
(games.live.publish hands a change straight to this process's hub). Each holds
its publishing side (request threads, after commit) and its listening side (a
task on the server's event loop that hands what it hears to the hub).
games.live.publish picks the broker (once per configuration, not on every
publish), games.live.hub.Hub.start the listener.
"""
