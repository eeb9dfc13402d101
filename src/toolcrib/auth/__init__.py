"""toolcrib.auth"""
