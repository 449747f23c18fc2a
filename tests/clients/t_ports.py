"""Free loopback ports for the client tests, claimed among test processes.

A port is claimed by an abstract Unix socket named after it and held until
the process exits, as tests/integration/harness.h claims its own: a test
running beside this one cannot pick the port while a server here restarts
on it.
"""
import os
import socket

_claims = []


def free_port():
    """A port nothing listens on and no other test process has claimed."""
    for _ in range(200):
        s = socket.socket()
        port = 10000 + int.from_bytes(os.urandom(2), "little") % 20000
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            s.close()
        claim = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            claim.bind("\0shmkv-test-port-%d" % port)
        except OSError:
            claim.close()
            continue
        _claims.append(claim)
        return port
    raise RuntimeError("no free port")
