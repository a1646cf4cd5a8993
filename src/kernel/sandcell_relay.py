"""Byte relays between pairs of sockets, from one epoll loop in a thread of
their own: the network forwarder's (sandcell_network_forwarder.py, the
sandbox's way out to its gate) and the port ingress's (sandcell_ports.py, the
host's way in to a port something listens on inside the sandbox).

A link is two non-blocking sockets: bytes read from one are written to the
other at once, in the same wake-up, and held only while the other side is
slow (then that side is not read: memory stays one chunk per direction). An
end of one side's input ends the other's output; a link closes when both
directions are done. Nothing in a link is looked at: every decision is made
by whoever is on the far side of the socket to the host.
"""

import collections
import os
import selectors
import socket

CHUNK_BYTES = 256 * 1024


class Direction:
    """Bytes from one socket to the other: what was read and not yet written, and whether the source ended."""

    def __init__(self, source, target):
        self.source = source
        self.target = target
        self.pending = b""
        self.ended = False

    def done(self):
        return self.ended and not self.pending


class Relay:
    """The loop: links, and `handlers` (a registered object's data that is callable is called with the events)."""

    def __init__(self):
        self.selector = selectors.DefaultSelector()
        # socket → (the direction it reads for, the direction it writes for)
        self.directions = {}
        self.links = 0
        # Work other threads hand the loop (post), run in its thread: the selector is not shared.
        self.jobs = collections.deque()
        self.wake_read, self.wake_write = os.pipe()
        os.set_blocking(self.wake_read, False)
        os.set_blocking(self.wake_write, False)
        self.selector.register(self.wake_read, selectors.EVENT_READ, self.run_jobs)
        # Called about once a second from the loop, whatever happens (deadlines).
        self.on_tick = None

    def post(self, job):
        """Runs `job()` in the loop's thread, soon."""
        self.jobs.append(job)
        try:
            os.write(self.wake_write, b"x")
        except BlockingIOError:
            pass  # the loop has wake-ups queued already

    def run_jobs(self, _events):
        try:
            while os.read(self.wake_read, 4096):
                pass
        except BlockingIOError:
            pass
        while self.jobs:
            self.jobs.popleft()()

    def run(self):
        while True:
            for key, events in self.selector.select(1.0):
                if callable(key.data):
                    try:
                        key.data(events)
                    except Exception:
                        # One connection's fault is its own; the loop serves every other one.
                        pass
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
            if self.on_tick is not None:
                self.on_tick()

    def link(self, one, other):
        """Relays between two connected sockets until both directions are done."""
        one.setblocking(False)
        other.setblocking(False)
        for each in (one, other):
            if each.family in (socket.AF_INET, socket.AF_INET6):
                each.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        there = Direction(one, other)
        back = Direction(other, one)
        self.directions[one] = (there, back)
        self.directions[other] = (back, there)
        self.links += 1
        self.selector.register(one, selectors.EVENT_READ, self.directions[one])
        self.selector.register(other, selectors.EVENT_READ, self.directions[other])

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
