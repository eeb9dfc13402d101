"""Who may reach what: roles, scopes, classification, the one restriction resolver. Pure."""
