"""``toolstitch proxy``: a pass-through gateway that checks every call, and with
``enforce`` a guard that never lets a byte complete an invalid call.

``Proxy(upstream)`` is an ASGI application (served by uvicorn; upstream requests go
through an ``httpx.AsyncClient``: ``pip install 'toolstitch[proxy]'``). It forwards every
request to ``upstream`` with its path, query, headers and body. Each response is
reassembled (streamed or whole, any dialect the ``Assembler`` reads), every call is
validated against the ``tools`` the request itself declared (in any provider's form
``Toolset`` reads), and one record per response is handed to ``on_record``. Headers are
never recorded, and the query string is left out of every record and log line (Gemini
sends its key there).

Without ``enforce`` the body is streamed back unchanged and unbuffered, byte for byte.
With ``enforce`` every 2xx response whose request declared tools goes through the core's
``toolstitch.guard.Guard``: it is released event by event, each event that completes a
call held until the call validates, and a response with an invalid call, or anything
the guard cannot check, ends in the provider's own error shape (docs/integrations.md,
"The guard").

The package is plumbing: ``app`` (the ASGI application), ``toolsets`` (the tools each
request declares, compiled once per distinct declaration), ``upstream`` (the answer for an
upstream that failed), ``records``, ``spans`` (OpenTelemetry), ``command`` (the command
line).
"""

from .app import HEALTH_PATH, Proxy
from .command import nodelay_protocol, serve
from .records import Record

__all__ = ["HEALTH_PATH", "Proxy", "Record", "nodelay_protocol", "serve"]
