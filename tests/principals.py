"""The principal a test acts as when it does what the command line on the host does.

Every gateway function takes the principal it acts for (#21): there is no "no principal" that
skips the checks. The host's operator is an owner holding every scope; the tests' organizations
name their first owner ``owner``.
"""

from __future__ import annotations

from toolcrib.policy.gates import Operator
from toolcrib.policy.scopes import SCOPES

__all__ = ["OPERATOR"]

OPERATOR = Operator(member="owner", role="owner", scopes=SCOPES, grant_id="cli")
