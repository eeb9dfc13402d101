"""toolcrib.cli"""
