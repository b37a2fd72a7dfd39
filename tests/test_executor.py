"""Where runs go: a --scheduler address that is not a Dask scheduler is a one-line error."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from pfstune.errors import UserError
from pfstune.executor import open_executor


@pytest.fixture
def not_dask() -> Iterator[str]:
    """A TCP server that answers every connection as a web server would, then keeps it open."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" * 4)
            held.append(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def test_a_server_that_is_not_a_dask_scheduler_is_a_user_error(not_dask: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("distributed")
    monkeypatch.setattr("pfstune.executor.CONNECT_TIMEOUT_S", 2)
    expected = rf"--scheduler {not_dask}: .*(not a Dask scheduler|cannot connect)"
    with pytest.raises(UserError, match=expected) as caught, open_executor(scheduler=not_dask):
        pass
    assert "\n" not in str(caught.value)
