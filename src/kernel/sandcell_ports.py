"""The host's way in to a port something listens on inside the sandbox.

The sandbox's network namespace has loopback alone, and the host is outside
it. The host binds one unix socket of its own into the sandbox (the session's
ingress socket, at the path the supervisor's options name) and, for each
connection it wants to a port, sends `port-connect` with the port and a token
it chose. The ingress thread connects to the port on the sandbox's loopback
(127.0.0.1, then ::1), connects to the host's socket, writes one line there,
`TOKEN ok`, `TOKEN closed` (nothing listens) or `TOKEN busy`, and on `ok`
relays both ways until both ends are done (sandcell_relay.py). The host
matches the line to the connection it asked for and trusts nothing else on
the socket: code in the sandbox can connect to it too, but cannot know a
token. The thread starts with the first connection asked for, so a session
that serves nothing pays nothing.

`port-list` answers the TCP ports something listens on, read from the
sandbox's own /proc/net/tcp and tcp6 (its network namespace's), on an
address loopback reaches.
"""

import errno
import re
import selectors
import socket
import threading
import time

from sandcell_relay import Relay

MAX_CONNECTIONS = 256
MAX_PENDING = 64
CONNECT_SECONDS = 5.0
TOKEN = re.compile(r"[0-9a-f]{32}\Z")
ADDRESSES = (("127.0.0.1", socket.AF_INET), ("::1", socket.AF_INET6))
LISTEN = "0A"


class Ingress(Relay):
    def __init__(self, socket_path):
        super().__init__()
        self.socket_path = socket_path
        self.pending = {}  # socket → (token, port, the addresses left to try, deadline)
        self.on_tick = self.expire

    def connect(self, port, token):
        """From the supervisor's thread: queue a connection to `port` for `token`."""
        self.post(lambda: self.begin(port, token, list(ADDRESSES)))

    def begin(self, port, token, addresses):
        if self.links >= MAX_CONNECTIONS or len(self.pending) >= MAX_PENDING:
            self.answer(token, b"busy")
            return
        while addresses:
            address, family = addresses.pop(0)
            try:
                sock = socket.socket(family, socket.SOCK_STREAM)
            except OSError:
                continue  # no IPv6 in this namespace, say
            sock.setblocking(False)
            code = sock.connect_ex((address, port))
            if code in (0, errno.EINPROGRESS):
                self.pending[sock] = (token, port, addresses, time.monotonic() + CONNECT_SECONDS)
                self.selector.register(sock, selectors.EVENT_WRITE, lambda events, sock=sock: self.connected(sock))
                return
            sock.close()
        self.answer(token, b"closed")

    def connected(self, sock):
        token, port, addresses, _ = self.pending.pop(sock)
        self.selector.unregister(sock)
        if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
            sock.close()
            self.begin(port, token, addresses)
            return
        host = self.answer(token, b"ok", keep=True)
        if host is None:
            sock.close()
            return
        self.link(host, sock)

    def expire(self):
        """A port whose listener never accepts (its backlog full) is answered `closed` after CONNECT_SECONDS."""
        now = time.monotonic()
        for sock, (token, _port, _addresses, deadline) in list(self.pending.items()):
            if now >= deadline:
                del self.pending[sock]
                self.selector.unregister(sock)
                sock.close()
                self.answer(token, b"closed")

    def answer(self, token, status, keep=False):
        """Connects to the host's socket and says how it went; with `keep`, returns that connection."""
        host = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            host.settimeout(2.0)
            host.connect(self.socket_path)
            host.sendall(token.encode("ascii") + b" " + status + b"\n")
        except OSError:
            host.close()
            return None
        if keep:
            return host
        host.close()
        return None


_ingress = None
_lock = threading.Lock()


def connect(socket_path, port, token):
    """port-connect: starts the ingress thread the first time."""
    global _ingress
    with _lock:
        if _ingress is None:
            _ingress = Ingress(socket_path)
            threading.Thread(target=_ingress.run, name="port-ingress", daemon=True).start()
    _ingress.connect(port, token)


def valid_request(port, token):
    return type(port) is int and 1 <= port <= 65535 and isinstance(token, str) and TOKEN.match(token) is not None


def _ipv4(word):
    value = int(word, 16)
    return socket.inet_ntop(socket.AF_INET, value.to_bytes(4, "little"))


def _ipv6(text):
    raw = b"".join(int(text[index : index + 8], 16).to_bytes(4, "little") for index in range(0, 32, 8))
    return socket.inet_ntop(socket.AF_INET6, raw)


def _reachable(address):
    """Whether the sandbox's loopback reaches a listener on this address (the namespace has no other interface)."""
    return address in ("0.0.0.0", "::", "::1") or address.startswith("127.") or address.startswith("::ffff:127.")


def listening(skip=()):
    """[{port, address}] of the TCP listeners loopback reaches, one per port (the lowest address first), by port."""
    found = {}
    for name, decode in (("/proc/net/tcp", _ipv4), ("/proc/net/tcp6", _ipv6)):
        try:
            with open(name) as table:
                lines = table.read().splitlines()[1:]
        except OSError:
            continue  # no IPv6 here
        for line in lines:
            fields = line.split()
            if len(fields) < 4 or fields[3] != LISTEN:
                continue
            address_hex, _, port_hex = fields[1].partition(":")
            try:
                address, port = decode(address_hex), int(port_hex, 16)
            except (ValueError, OSError):
                continue
            if port in skip or not _reachable(address):
                continue
            found.setdefault(port, address)
    return [{"port": port, "address": found[port]} for port in sorted(found)]


def port_connect(supervisor, message):
    """The `port-connect` request: queued at once and answered `ok`; the connection's own line says how it went."""
    from sandcell_routes import RequestError

    port, token = message.get("port"), message.get("token")
    if supervisor.ingress_socket is None:
        raise RequestError("ingress-unavailable", "this sandbox has no ingress socket: the host did not bind one in")
    if not valid_request(port, token):
        raise RequestError("invalid-request", "port-connect needs a port from 1 to 65535 and a token of 32 hex digits")
    connect(supervisor.ingress_socket, port, token)
    supervisor.reply(message)


def port_list(supervisor, message):
    """The `port-list` request: the ports something listens on (not the network forwarder's own)."""
    supervisor.reply(message, {"ports": listening(skip=supervisor.own_ports)})
