"""Python clients for burrow, the sandbox runtime for AI agents' commands.

- :class:`Client` speaks the HTTP API of ``burrow serve`` (docs/api.md).
- :class:`CliClient` has the same methods, carried out by the ``burrow`` binary, for when
  no server runs.
- :func:`connect` picks one: a :class:`Client` when a server answers, else a :class:`CliClient`.
- :mod:`burrow.langchain` has ``BurrowExecutionPolicy``, which runs LangChain's persistent
  shell tool inside a burrow sandbox (``pip install 'burrow-sandbox[langchain]'``).

Both clients raise :class:`BurrowError` (with ``.status`` and ``.code``), :class:`NotFound`
for a missing (or another tenant's) workspace, file, snapshot..., :class:`Unauthorized`
for a missing or revoked token.

>>> import burrow
>>> b = burrow.connect()                                          # doctest: +SKIP
>>> ws = b.create_workspace(name="demo")                          # doctest: +SKIP
>>> b.file_write("demo", "hello.py", "print('hi')\\n")            # doctest: +SKIP
>>> b.exec("demo", ["python3", "hello.py"])["stdout"]             # doctest: +SKIP
'hi\\n'
"""

from __future__ import annotations

import os

from burrow._errors import BurrowError, Conflict, Invalid, NotFound, TooLarge, Unauthorized
from burrow.cli import CliClient
from burrow.client import DEFAULT_URL, Client, decode_content

__all__ = [
    "BurrowError",
    "CliClient",
    "Client",
    "Conflict",
    "Invalid",
    "NotFound",
    "TooLarge",
    "Unauthorized",
    "connect",
    "decode_content",
]


def connect(
    base_url: str | None = None,
    token: str | None = None,
    *,
    binary: str | None = None,
    probe_timeout: float = 2.0,
) -> Client | CliClient:
    """A :class:`Client` for ``base_url`` when its ``GET /healthz`` answers, else a :class:`CliClient`.

    ``base_url`` defaults to ``$BURROW_URL``, else ``http://127.0.0.1:7878``; ``token`` to
    ``$BURROW_TOKEN``; ``binary`` (for the CLI) to ``$BURROW_BIN``, else ``burrow`` on ``PATH``.
    """
    url = base_url or os.environ.get("BURROW_URL") or DEFAULT_URL
    client = Client(url, token)
    try:
        client.healthz(timeout=probe_timeout)
    except BurrowError:
        return CliClient(binary)
    return client
