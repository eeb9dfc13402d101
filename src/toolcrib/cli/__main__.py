"""``python -m toolcrib.cli``: the same command line as ``toolcrib``."""

from toolcrib.cli.main import app

app()
