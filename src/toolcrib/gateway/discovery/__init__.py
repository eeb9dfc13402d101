"""Finding tools: search, meaning vectors, examples, learning, cards, action handles, the meta-tools'
surface, diagnosis, the playground, the operator's tool list.
"""
