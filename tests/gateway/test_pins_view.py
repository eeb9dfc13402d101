"""R-13.4: the diff an admin reviews shows the server's text exactly, look-alikes and controls too."""

from __future__ import annotations

from toolcrib.catalog.pins import Pin, digest
from toolcrib.gateway.connections.pins import _view
from toolcrib.store.pins import Change

ACCEPTED = {"description": "Sync the contacts of a mailing list.", "inputSchema": {}, "annotations": {}}


def test_r13_4_diff_escapes_look_alike_letters_and_terminal_controls() -> None:
    offered = {**ACCEPTED, "description": "Sync the cоntacts\u200b of a mailing list.\x1b[2K\x9b"}
    pin = Pin("sync", ACCEPTED, digest(ACCEPTED), offered, digest(offered), None, 1.0)
    view = _view(Change("crm", pin))
    added = [line for line in view["diff"].splitlines() if line.startswith("+  ")]
    assert added == [
        '+  "description": "Sync the c\\u043entacts\\u200b of a mailing list.\\u001b[2K\\u009b",'
    ]
    assert view["diff"].isascii()
    assert (view["kind"], view["sha256"], view["offered"]) == ("changed", digest(offered), offered)


def test_r13_4_a_new_tool_diffs_against_nothing() -> None:
    pin = Pin("sync", None, None, ACCEPTED, digest(ACCEPTED), None, 1.0)
    view = _view(Change("crm", pin))
    assert view["kind"] == "new"
    assert all(line.startswith(("+", "@@", "---")) for line in view["diff"].splitlines())
