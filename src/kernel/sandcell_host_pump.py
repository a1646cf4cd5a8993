"""The host channel's input through a thread, for a sandbox that may be
checkpointed (gVisor): after a restore, that runsc reports a host
descriptor's readiness to epoll once and then never again, so the
supervisor's loop would hear the host's first request and no other. A
thread blocked in read(2) on the host's descriptor is woken every time; it
passes what it reads on through a socket pair inside the sandbox, which the
loop watches as it watched the host's descriptor."""

import os
import socket
import threading


def pumped_host_input(fd=0):
    """A descriptor that gives what `fd` gives, read by a thread of its own;
    it reaches end of file when `fd` does (the host closed the channel)."""
    inside, outside = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    inside.setblocking(False)

    def pump():
        try:
            while True:
                data = os.read(fd, 1 << 16)
                if not data:
                    break
                outside.sendall(data)
        except OSError:
            pass
        finally:
            outside.close()

    threading.Thread(target=pump, name="sandcell-host-input", daemon=True).start()
    # The socket object must outlive this call: its descriptor is the loop's.
    pumped_host_input.kept = inside
    return inside.fileno()
