"""Upstream connections: add/sync/remove, catalogs, definitions, upstream OAuth and its binding, pins,
upstream events, URL secrets.
"""
