"""The sandbox's one way out when its session allows some internet access.

The sandbox has its own network namespace with loopback alone: no interface
with a route, no DNS. The host binds one unix socket into it, connected to the
session's gate (an HTTP/CONNECT proxy that enforces the session's policy).
This forwarder listens on 127.0.0.1:PORT inside the sandbox and copies each
connection's bytes to a new connection on that socket, both ways, untouched:
every decision is the gate's, none is made here, so nothing sandboxed code
does to this process (it runs as the same user) widens what it can reach.

One thread serves every connection from one epoll loop (sandcell_relay.py),
with non-blocking sockets: bytes read are written on at once, in the same
wake-up, and held only when the other side is slow. A request crosses this
process several times (CONNECT, TLS's round trips, the answer), so each
crossing must cost a single wake-up: no thread started per connection, no
thread handing bytes to another, and no Nagle delay on what goes back to the
client.
"""

import selectors
import socket
import threading
import time

from sandcell_relay import Relay

# Bounded: the gate has its own, stricter, limits.
MAX_CONNECTIONS = 256
REFUSAL = (
    b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n"
    b"Content-Length: 37\r\n\r\nsandcell: the network gate is closed\n"
)


def start(socket_path, port):
    """Listens at once (before any user code runs) and serves from a daemon thread."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    listener.setblocking(False)
    forwarder = Forwarder(listener, socket_path)
    threading.Thread(target=forwarder.run, name="network-forwarder", daemon=True).start()
    return listener


class Forwarder(Relay):
    def __init__(self, listener, socket_path):
        super().__init__()
        self.listener = listener
        self.socket_path = socket_path
        self.selector.register(listener, selectors.EVENT_READ, self.accept)

    def accept(self, _events=None):
        while True:
            try:
                client, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                # Out of descriptors, say: the connection stays queued, so wait before trying again
                # rather than spin on a listener that stays readable.
                time.sleep(0.05)
                return
            if self.links >= MAX_CONNECTIONS:
                client.close()
                continue
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(self.socket_path)
            except OSError:
                # The gate is gone (the session is closing): say so the way a proxy would.
                upstream.close()
                self.refuse(client)
                continue
            self.link(client, upstream)

    def refuse(self, client):
        try:
            client.setblocking(False)
            client.send(REFUSAL)
        except OSError:
            pass
        client.close()
