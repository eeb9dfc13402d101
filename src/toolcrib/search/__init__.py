"""Which tools match: tokenizer, lexical scorer, typo matcher, optional vectors, index. Pure."""
