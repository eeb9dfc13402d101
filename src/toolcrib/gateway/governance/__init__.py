"""What the owner rules: restrictions and frozen values, approvals, rate limits and their buckets, the
one reach decision.
"""
