"""What a span may carry (R-14.2): the closed set of attribute names, their value types, and the
span kinds. Both :mod:`toolcrib.tracing` (the API every layer calls) and :mod:`toolcrib.otlp` (the
SDK behind it, loaded only when traces are on) read these, so neither imports the other for them.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["ACCOUNT", "ERROR_CODE", "MEMBER", "OPERATION", "OUTCOME", "STEP", "TOOL", "Attribute", "Kind"]

Kind = Literal["internal", "server", "client"]
Attribute = str | bool | int | float

# The attribute names a span may carry (and nothing else the code puts there).
OPERATION = "toolcrib.operation"
ACCOUNT = "toolcrib.account"
TOOL = "toolcrib.tool"
MEMBER = "toolcrib.member"
OUTCOME = "toolcrib.outcome"
ERROR_CODE = "toolcrib.error_code"
STEP = "toolcrib.step"
