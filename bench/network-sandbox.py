# One small HTTPS request per sample on a fresh connection, timed where it is made: TCP (to the server,
# or to a proxy then CONNECT), TLS verified against the run's CA, GET, the answer read to the end.
# The same code runs on the host (direct, or through a gate on TCP) and inside a sandbox (through its
# forwarder on 127.0.0.1:3128 and the gate's socket), so the difference is the path alone.
import socket
import ssl
import time

# The name that reaches a service on the host's loopback through a gate, as a sandbox reaches one.
NAME = "host.sandcell.internal"


def _read_head(connection):
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = connection.recv(4096)
        if not chunk:
            raise OSError("the proxy closed before answering")
        head += chunk
    if not head.startswith(b"HTTP/1.1 200"):
        raise OSError(head.split(b"\r\n")[0].decode("latin1"))


def one_request(context, address, port, proxy):
    if isinstance(proxy, str):
        # A gate's unix socket itself (inside a sandbox: the one the forwarder connects to).
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(proxy)
    else:
        connection = socket.create_connection(proxy or address)
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if proxy:
        connection.sendall(("CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (NAME, port, NAME, port)).encode())
        _read_head(connection)
    secure = context.wrap_socket(connection, server_hostname=NAME)
    secure.sendall(("GET /small HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % NAME).encode())
    received = 0
    while True:
        chunk = secure.recv(4096)
        if not chunk:
            break
        received += len(chunk)
    secure.close()
    if received == 0:
        raise OSError("no answer")


def measure(count, cafile, port, proxy=None):
    """Milliseconds per request, `count` of them, after five not counted."""
    context = ssl.create_default_context(cafile=cafile)
    times = []
    for sample in range(count + 5):
        started = time.perf_counter()
        one_request(context, ("127.0.0.1", port), port, proxy)
        if sample >= 5:
            times.append((time.perf_counter() - started) * 1000)
    return times
