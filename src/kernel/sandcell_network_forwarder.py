"""The sandbox's one way out when its session allows some internet access.

The sandbox has its own network namespace with loopback alone: no interface
with a route, no DNS. The host binds one unix socket into it, connected to the
session's gate (an HTTP/CONNECT proxy that enforces the session's policy).
This forwarder listens on 127.0.0.1:PORT inside the sandbox and copies each
connection's bytes to a new connection on that socket, both ways, untouched:
every decision is the gate's, none is made here, so nothing sandboxed code
does to this process (it runs as the same user) widens what it can reach.
"""

import socket
import threading

# Bounded: a connection costs two threads here; the gate has its own, stricter, limits.
MAX_CONNECTIONS = 256
CHUNK_BYTES = 64 * 1024


def start(socket_path, port):
    """Listens at once (before any user code runs) and serves from a daemon thread."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
    thread = threading.Thread(target=_accept, args=(listener, socket_path, slots), daemon=True)
    thread.start()
    return listener


def _accept(listener, socket_path, slots):
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        if not slots.acquire(blocking=False):
            client.close()
            continue
        threading.Thread(target=_connect, args=(client, socket_path, slots), daemon=True).start()


def _connect(client, socket_path, slots):
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(socket_path)
    except OSError:
        # The gate is gone (the session is closing): say so the way a proxy would.
        _refuse(client)
        upstream.close()
        slots.release()
        return
    finished = threading.Semaphore(0)
    threading.Thread(target=_copy, args=(upstream, client, finished), daemon=True).start()
    _copy(client, upstream, finished)
    finished.acquire()
    finished.acquire()
    client.close()
    upstream.close()
    slots.release()


def _copy(source, target, finished):
    try:
        while True:
            chunk = source.recv(CHUNK_BYTES)
            if not chunk:
                break
            target.sendall(chunk)
    except OSError:
        pass
    try:
        target.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    finished.release()


def _refuse(client):
    try:
        client.sendall(
            b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n"
            b"Content-Length: 37\r\n\r\nsandcell: the network gate is closed\n"
        )
    except OSError:
        pass
    client.close()
