"""Who calls: bearer grants, the authorization server, the identity provider's sign-in, grants and
members.
"""
