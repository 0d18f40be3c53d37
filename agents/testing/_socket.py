"""A listening socket for the model server, importing nothing but `socket` (the startup hook
binds one before the server's own imports are loaded)."""

from __future__ import annotations

import socket


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to `host`:`port` (0: any free port) and listening."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(1024)
    return sock
