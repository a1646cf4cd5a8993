"""The sandbox's one way out when its session allows some internet access.

The sandbox has its own network namespace with loopback alone: no interface
with a route, no DNS. The host binds one unix socket into it, connected to the
session's gate (an HTTP/CONNECT proxy that enforces the session's policy).
This forwarder listens on 127.0.0.1:PORT inside the sandbox and copies each
connection's bytes to a new connection on that socket, both ways, untouched:
every decision is the gate's, none is made here, so nothing sandboxed code
does to this process (it runs as the same user) widens what it can reach.

One thread serves every connection from one epoll loop, with non-blocking
sockets: bytes read are written on at once, in the same wake-up, and held
only when the other side is slow. A request crosses this process several
times (CONNECT, TLS's round trips, the answer), so each crossing must cost a
single wake-up: no thread started per connection, no thread handing bytes to
another, and no Nagle delay on what goes back to the client.
"""

import selectors
import socket
import threading
import time

# Bounded: the gate has its own, stricter, limits.
MAX_CONNECTIONS = 256
CHUNK_BYTES = 64 * 1024
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


class Direction:
    """Bytes from one socket to the other: what was read and not yet written, and whether the source ended."""

    def __init__(self, source, target):
        self.source = source
        self.target = target
        self.pending = b""
        self.ended = False

    def done(self):
        return self.ended and not self.pending


class Forwarder:
    def __init__(self, listener, socket_path):
        self.listener = listener
        self.socket_path = socket_path
        self.selector = selectors.DefaultSelector()
        self.selector.register(listener, selectors.EVENT_READ, None)
        # socket → (the direction it reads for, the direction it writes for)
        self.directions = {}
        self.links = 0

    def run(self):
        while True:
            for key, events in self.selector.select():
                if key.data is None:
                    self.accept()
                    continue
                try:
                    outgoing, incoming = key.data
                    if events & selectors.EVENT_WRITE and key.fileobj in self.directions:
                        self.flush(incoming)
                    if events & selectors.EVENT_READ and key.fileobj in self.directions:
                        self.read(outgoing)
                except Exception:
                    # Whatever went wrong ends this link alone: the loop serves every other one.
                    self.close(key.fileobj)

    def accept(self):
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
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            client.setblocking(False)
            upstream.setblocking(False)
            up = Direction(client, upstream)
            down = Direction(upstream, client)
            self.directions[client] = (up, down)
            self.directions[upstream] = (down, up)
            self.links += 1
            self.selector.register(client, selectors.EVENT_READ, self.directions[client])
            self.selector.register(upstream, selectors.EVENT_READ, self.directions[upstream])

    def read(self, direction):
        try:
            chunk = direction.source.recv(CHUNK_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.close(direction.source)
            return
        if chunk:
            direction.pending = chunk
        else:
            direction.ended = True
        self.flush(direction)

    def flush(self, direction):
        """Writes what is held; ends the target's writing side once the source ended and all is written."""
        try:
            while direction.pending:
                sent = direction.target.send(direction.pending)
                direction.pending = direction.pending[sent:]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self.close(direction.source)
            return
        if direction.done():
            try:
                direction.target.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        self.update(direction.source)
        self.update(direction.target)

    def update(self, sock):
        """Watch a socket for reading while its bytes can move on, for writing while bytes wait for it."""
        if sock not in self.directions:
            return
        outgoing, incoming = self.directions[sock]
        if outgoing.done() and incoming.done():
            self.close(sock)
            return
        events = 0
        if not outgoing.ended and not outgoing.pending:
            events |= selectors.EVENT_READ
        if incoming.pending:
            events |= selectors.EVENT_WRITE
        registered = self.selector.get_map().get(sock)
        if registered is not None and registered.events == events:
            return
        if registered is not None:
            self.selector.unregister(sock)
        if events:
            self.selector.register(sock, events, self.directions[sock])

    def close(self, sock):
        """Ends a link: both its sockets."""
        if sock not in self.directions:
            return
        outgoing, _ = self.directions[sock]
        for each in (outgoing.source, outgoing.target):
            self.directions.pop(each, None)
            if self.selector.get_map().get(each) is not None:
                self.selector.unregister(each)
            each.close()
        self.links -= 1

    def refuse(self, client):
        try:
            client.setblocking(False)
            client.send(REFUSAL)
        except OSError:
            pass
        client.close()
