"""Web helpers every app of the site shares (as healthchecks' hc/lib):

- error_pages: `error_page()`, the one way to answer with a readable refusal,
  the handlers Django calls (400, 403, 404, 500/503, the CSRF failure), and the
  pages of the refusals before a view: `get_only`, `post_only`, `allow_methods`
  mark a view's methods (a readable 405), and a NUL byte's 400;
- deferred: `defer()`, work a page hands off until after its response;
- private_dirs: directories only the server's user may write.

Apps import these; these import no app's models and nothing of the server
(tictactoe_site.server.serve, asgi, bridge), which imports `deferred` instead.
"""
