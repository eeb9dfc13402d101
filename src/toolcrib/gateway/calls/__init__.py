"""One call's pipeline: execute_tool, result shaping, stored results, secret values, what a client
session carries.
"""
