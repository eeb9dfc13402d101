"""The organization as a file (#26): ``toolcrib plan`` / ``apply`` / ``export``.

``models`` (the file's shape and its JSON Schema), ``loading`` (hostile YAML in, values with their
line and column out), ``refs`` (secrets by reference), ``checks`` (the whole file checked by the
gateway's own validators), ``state`` (the organization as the gateway has it), ``planning`` (what
would change), ``applying`` (the change, all or nothing), ``exporting`` (the organization as a file).
"""
