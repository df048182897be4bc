"""The one exception family every burrow client raises."""

from __future__ import annotations

import re


class BurrowError(Exception):
    """burrow refused or failed a request.

    ``str(error)`` is burrow's one-line message (what is wrong and what to do).
    ``status`` is the HTTP status (``None`` when the error came from the CLI or the
    server could not be reached); ``code`` is burrow's error code: ``unauthorized``,
    ``not_found``, ``invalid``, ``conflict``, ``too_large``, ``unavailable``,
    ``internal`` (``None`` when the CLI's message does not say which).
    """

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, status={self.status!r}, code={self.code!r})"


class Unauthorized(BurrowError):
    """No token, an unknown token or a revoked one (HTTP 401)."""


class NotFound(BurrowError):
    """No such workspace (or another tenant's), file, snapshot, shell, session or service (404)."""


class Invalid(BurrowError):
    """The request itself is wrong: a bad argument, a path leaving /workspace, bad JSON (400)."""


class Conflict(BurrowError):
    """The request clashes with the current state, e.g. a name already taken (409)."""


class TooLarge(BurrowError):
    """The request body is over burrow's limit (413)."""


_BY_CODE: dict[str, type[BurrowError]] = {
    "unauthorized": Unauthorized,
    "not_found": NotFound,
    "invalid": Invalid,
    "conflict": Conflict,
    "too_large": TooLarge,
}

_CODE_BY_STATUS: dict[int, str] = {
    400: "invalid",
    401: "unauthorized",
    404: "not_found",
    409: "conflict",
    413: "too_large",
    500: "internal",
    503: "unavailable",
}


def http_error(status: int, code: str | None, message: str) -> BurrowError:
    """The exception for an HTTP error answer: by its ``code``, else by its status."""
    if not code:
        code = _CODE_BY_STATUS.get(status)
    cls = _BY_CODE.get(code or "", BurrowError)
    return cls(message, status=status, code=code)


# The CLI says what went wrong only in words (exit status 125 for every failure), so the
# code is read from the shape of its messages (crates/burrow-workspace/src/error.rs).
_CLI_NOT_FOUND = re.compile(
    r"\bno (workspace|snapshot|shell|session|service|secret)s? named\b"
    r"|: no such file or directory$",
    re.IGNORECASE,
)
_CLI_CONFLICT = re.compile(r"\balready exists\b|\bis already running$", re.IGNORECASE)
_CLI_INVALID = re.compile(r"\bleads outside the workspace$|\bis not a valid\b|\binvalid value\b")


def cli_error(stderr: str, exit_status: int) -> BurrowError:
    """The exception for a failed CLI call, from its last ``burrow: ...`` line on stderr."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    flagged = [line for line in lines if line.startswith("burrow: ")]
    if flagged:
        message = flagged[-1][len("burrow: ") :]
    elif lines:
        message = lines[-1]
    else:
        message = f"burrow exited with status {exit_status} and said nothing"
    if _CLI_NOT_FOUND.search(message):
        return NotFound(message, code="not_found")
    if _CLI_CONFLICT.search(message):
        return Conflict(message, code="conflict")
    if _CLI_INVALID.search(message):
        return Invalid(message, code="invalid")
    return BurrowError(message)
