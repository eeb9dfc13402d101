"""toolcrib.store"""
