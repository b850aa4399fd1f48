"""The web server: uvicorn, the ASGI application and its WSGI bridge."""
