"""Errors: spec errors stop a load; tool errors are observations the agent sees (EnvCraft Table 16)."""

from __future__ import annotations

from enum import Enum
from typing import Any


class SpecError(ValueError):
    """An app spec, environment or condition is malformed. The message names the field or clause."""


class ErrorKind(str, Enum):
    """Structured error categories an agent can receive from a tool call (EnvCraft Table 16)."""

    MISSING_FIELD = "missing_field"
    MALFORMED_ARGUMENTS = "malformed_arguments"
    UNKNOWN_TOOL = "unknown_tool"
    NOT_FOUND = "not_found"
    INVALID_TRANSITION = "invalid_transition"
    PERMISSION_DENIED = "permission_denied"
    CONSTRAINT_VIOLATION = "constraint_violation"
    INTERNAL = "internal"

    @property
    def status(self) -> int:
        """An HTTP-like code: 4xx is the agent's fault, 5xx the environment's."""
        return _STATUS[self]


_STATUS = {
    ErrorKind.MISSING_FIELD: 400,
    ErrorKind.MALFORMED_ARGUMENTS: 400,
    ErrorKind.UNKNOWN_TOOL: 404,
    ErrorKind.NOT_FOUND: 404,
    ErrorKind.INVALID_TRANSITION: 409,
    ErrorKind.PERMISSION_DENIED: 403,
    ErrorKind.CONSTRAINT_VIOLATION: 422,
    ErrorKind.INTERNAL: 500,
}


class ToolError(Exception):
    """Raised inside the runtime, caught by the session and turned into an error observation."""

    def __init__(self, kind: ErrorKind, message: str, **details: Any) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.details = details
