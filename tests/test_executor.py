"""Where runs go: a --scheduler address that is not a Dask scheduler is a one-line error."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pfstune.errors import UserError
from pfstune.executor import open_executor

REPO = Path(__file__).resolve().parents[1]


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


def test_ctrl_c_twice_stops_a_sweep_at_once(tmp_path: Path) -> None:
    """The whole process group gets each Ctrl-C: workers leave it to the parent, and the parent
    does not wait for the runs in progress (a second Ctrl-C used to leave it waiting for ever)."""
    scenario = REPO / "scenarios" / "suite" / "phase-change.yaml"
    code = "import sys; from pfstune.cli.main import main; sys.exit(main(sys.argv[1:]))"
    process = subprocess.Popen(
        [sys.executable, "-c", code, "sim", "sweep", str(scenario), "--grid", "dial99", "--jobs", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a shell's foreground job
        # a shell starts background jobs with SIGINT ignored, and Python keeps an ignored SIGINT
        # ignored: a test run from one (`.ci/run &`) must not pass that on to the "foreground job"
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(4)  # the pool is up and runs are in progress
    os.killpg(process.pid, signal.SIGINT)
    time.sleep(0.5)
    os.killpg(process.pid, signal.SIGINT)
    try:
        _, err = process.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise AssertionError("still running 20 s after two Ctrl-C") from None
    assert process.returncode in (130, -signal.SIGINT), err
    assert "Traceback" not in err


def test_a_failure_leaves_no_pool_thread_for_the_exit_handler_to_race() -> None:
    """A run's error ends the pool before it reaches the caller.

    CPython 3.11's exit handler wakes each process pool's manager thread through a pipe that the
    thread closes as it ends; a thread still ending at exit made the two race, and a user's
    one-line error came with an OSError traceback (EBADF) from the interpreter's shutdown.
    """
    managers: list[threading.Thread] = []

    def fail_in_a_pool() -> None:
        with open_executor(jobs=2) as pool:
            assert list(pool.map(int, ["1", "2"])) == [1, 2]  # workers and manager thread running
            managers.append(pool._executor_manager_thread)  # type: ignore[attr-defined]
            raise ValueError("not a number")

    with pytest.raises(ValueError, match="not a number"):
        fail_in_a_pool()
    assert managers[0] is not None
    assert not managers[0].is_alive()
