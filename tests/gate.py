"""A TCP relay in front of a server, for the tests of what a network fault does: clients are given
the gate's address; the test closes it (the server is unreachable: connections refused, open ones
cut), opens it again, or slows it (each connection's bytes towards the server at a given rate).

    gate = Gate(s3_server.port).start()
    env = {..., "ARTIFACT_STORE_ENDPOINT_URL": gate.url}
    gate.close(); ...; gate.open()
    gate.slow(64 * 1024); ...; gate.slow(None)
"""
from __future__ import annotations

import contextlib
import socket
import threading
import time

from tests.servers import free_port

CHUNK = 16 * 1024


class Gate:
    def __init__(self, target_port: int, port: int | None = None, host: str = "127.0.0.1"):
        self.target = (host, target_port)
        self.port = port or free_port()
        self.url = f"http://{host}:{self.port}"
        self.rate: float | None = None  # bytes per second towards the server, per connection
        self._listener: socket.socket | None = None
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()

    def start(self) -> Gate:
        return self.open()

    def open(self) -> Gate:
        """Accept connections again (on the same port)."""
        if self._listener is not None:
            return self
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        sock.listen(64)
        self._listener = sock
        threading.Thread(target=self._accept, args=(sock,), daemon=True, name=f"gate-{self.port}").start()
        return self

    def close(self) -> None:
        """Refuse new connections and cut the open ones: the server is gone for its clients."""
        sock, self._listener = self._listener, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        with self._lock:
            conns, self._conns = self._conns, set()
        for c in conns:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
            c.close()

    def slow(self, rate: float | None) -> None:
        """Relay at most `rate` bytes a second towards the server on each connection (None: at full speed)."""
        self.rate = rate

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._conns.update((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, towards_server: bool) -> None:
        try:
            while data := src.recv(CHUNK):
                if towards_server and self.rate:
                    time.sleep(len(data) / self.rate)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):  # (the other direction's pump then ends too)
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
            with self._lock:
                self._conns.discard(src)
                self._conns.discard(dst)
