"""toolcrib.gateway"""
