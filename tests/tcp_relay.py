"""A TCP relay between the app and a server, to cut and restore: a database restart without
restarting the shared PostgreSQL server.

    with TcpRelay(target_of(pg_url)) as relay:
        url = relay_url(pg_url, relay)      # the same database, through the relay
        relay.cut()                         # every connection dropped, new ones turned away
        relay.wait_for_refused(2)           # the app has tried (and retried) meanwhile
        relay.restore()                     # relaying again

`cut()` is what the app sees while PostgreSQL restarts: open connections end at once (the
server's processes exit) and a new connection is closed as soon as it is made ("server closed
the connection unexpectedly", as while the server shuts down or starts up). Counting those
attempts lets a test restore the database once the app has met the outage, with no timing.
"""

from __future__ import annotations

import contextlib
import socket
import threading

from sqlalchemy.engine import make_url

BUFFER = 65536


class TcpRelay:
    def __init__(self, target: tuple[str, int]):
        self.target = target
        self._changed = threading.Condition()
        self._sockets: set[socket.socket] = set()
        self._down = False
        self.refused = 0  # connections turned away while cut
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed on exit
                return
            with self._changed:
                if self._down:
                    self.refused += 1
                    self._changed.notify_all()
                    client.close()
                    continue
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._changed:
                self._sockets.update((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(BUFFER):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                self._close(sock)

    def _close(self, sock: socket.socket) -> None:
        with self._changed:
            self._sockets.discard(sock)
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()

    # --- the test's switches ------------------------------------------------------------------
    @property
    def connections(self) -> int:
        """Relayed connections open now (two sockets each)."""
        with self._changed:
            return len(self._sockets) // 2

    def cut(self) -> None:
        """Drop every connection and turn new ones away."""
        with self._changed:
            self._down = True
            self.refused = 0
            open_sockets = list(self._sockets)
        for sock in open_sockets:
            self._close(sock)

    def wait_for_refused(self, n: int, *, timeout: float = 120.0) -> None:
        """Until `n` connections were turned away since the cut."""
        with self._changed:
            if not self._changed.wait_for(lambda: self.refused >= n, timeout=timeout):
                raise AssertionError(f"only {self.refused} connection attempts in {timeout} s")

    def restore(self) -> None:
        with self._changed:
            self._down = False

    def __enter__(self) -> TcpRelay:
        self._listener.listen(128)
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.cut()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()


def relay_url(url: str, relay: TcpRelay) -> str:
    """`url` (a database URL) through the relay."""
    parsed = make_url(url).set(host="127.0.0.1", port=relay.port)
    return parsed.render_as_string(hide_password=False)


def target_of(url: str) -> tuple[str, int]:
    parsed = make_url(url)
    return parsed.host or "127.0.0.1", parsed.port or 5432
