"""Prompts and resources of connected servers: lists, reads, the same gates (SPEC section 16)."""
