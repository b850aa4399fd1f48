"""An ASGI HTTP scope, as uvicorn hands one to tictactoe_site.asgi: for tests that
call the real stream handler in-process."""


def http_scope(
    *, method: str, path: str, query_string: bytes, headers: list, server_name: str
) -> dict:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query_string,
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": (server_name, 80),
    }
