"""toolcrib.web"""
