"""toolcrib.upstream"""
