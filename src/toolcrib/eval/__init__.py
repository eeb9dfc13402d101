"""Fitting and evaluating search on the public evaluation sets (SPEC R-5.3, R-5.8, R-5.12).

Not part of the running gateway: only ``toolcrib eval`` (imported inside its command) and the
scripts of ``bench/`` import it. It may import ``toolcrib.search`` and ``toolcrib.catalog``; no
run-time package imports it (``tests/test_house.py``). What it needs of the index is public API of
``SearchIndex`` (``evidence``, ``slot``, ``name_at``, ``not_connected``, ``use_gate``, ``learn``).

Modules, one concept each: ``data`` (the sets and their rows), ``metrics`` (figures of a ranking),
``replay`` (a queries file through one index), ``engines`` (both catalogs in real indexes),
``examples`` (each query's evidence and candidates), ``history`` (simulated past use),
``fitting`` (the ranker and the gate), ``crossval`` (held-out figures and the learning curve).
"""
