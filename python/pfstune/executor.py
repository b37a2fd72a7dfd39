"""Where simulation runs execute: local worker processes, or a Dask distributed cluster.

Sweeps, benchmarks and collection are many independent runs.  They are submitted to a
:class:`concurrent.futures.Executor`, which is either a local process pool (the default, one
worker per core) or, given a scheduler address, a Dask ``distributed`` cluster through its
``concurrent.futures`` face (``Client.get_executor()``), so the same code scales past one
machine on an engine users already run.  Dask workers need pfstune installed (the functions
are sent by reference) and ``pip install 'pfstune[dask]'`` on the submitting side.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, InvalidStateError, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from typing import Any, TypeVar

from pfstune.errors import UserError

T = TypeVar("T")

#: How long to wait for a Dask scheduler to answer before giving up.
CONNECT_TIMEOUT_S = 10
#: How long a failed local pool's manager thread may take to end (its workers are killed).
MANAGER_EXIT_S = 10


@contextmanager
def open_executor(jobs: int | None = None, scheduler: str | None = None) -> Iterator[Executor]:
    """A local pool of ``jobs`` processes (default: one per core), or the Dask cluster at ``scheduler``."""
    if scheduler is None:
        # forkserver, not fork: a parent that already ran LightGBM has OpenMP threads, and a
        # forked child that runs LightGBM again can hang on their locks.
        context = multiprocessing.get_context("forkserver")
        pool = ProcessPoolExecutor(
            max_workers=max(1, jobs or os.cpu_count() or 1), mp_context=context, initializer=_ignore_sigint
        )
        try:
            yield pool
        except BaseException:
            # Ctrl-C (or an error): do not wait for the runs in progress, which a second Ctrl-C
            # would interrupt half-way and leave the interpreter's exit waiting on the workers
            workers = list((getattr(pool, "_processes", None) or {}).values())  # shutdown forgets them
            manager = getattr(pool, "_executor_manager_thread", None)  # and its manager thread
            pool.shutdown(wait=False, cancel_futures=True)
            # the pool's manager thread then finds its workers gone and fails the cancelled
            # futures, which raises InvalidStateError in that thread (CPython 3.11's
            # terminate_broken); nothing is lost, so its traceback is not printed
            threading.excepthook = _quiet_invalid_state(threading.excepthook)
            for process in workers:
                process.terminate()
            # let that thread end before the error goes on: at exit CPython 3.11 wakes it through
            # a pipe it closes as it ends, and the two racing printed an EBADF traceback under
            # the user's one-line error
            if manager is not None:
                manager.join(timeout=MANAGER_EXIT_S)
            raise
        pool.shutdown(wait=True)
        return
    try:
        from distributed import Client
    except ImportError:
        raise UserError(
            "--scheduler needs dask.distributed, which is not installed: pip install 'pfstune[dask]'"
        ) from None
    try:
        client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError, ValueError) as err:
        raise UserError(f"--scheduler {scheduler}: cannot connect to a Dask scheduler ({err})") from None
    except Exception as err:
        # whatever listens there is not a Dask scheduler: an HTTP server's reply read as a Dask
        # frame length, for one, asks numpy for exabytes
        raise UserError(
            f"--scheduler {scheduler}: what answers there is not a Dask scheduler ({type(err).__name__})"
        ) from None
    try:
        executor = client.get_executor()
        yield executor
        executor.shutdown(wait=True)
    finally:
        client.close()


def _quiet_invalid_state(
    previous: Callable[[threading.ExceptHookArgs], Any],
) -> Callable[[threading.ExceptHookArgs], Any]:
    def hook(args: threading.ExceptHookArgs) -> Any:
        if isinstance(args.exc_value, InvalidStateError):
            return None
        return previous(args)

    return hook


def _ignore_sigint() -> None:
    """In a worker: Ctrl-C reaches the whole process group, and only the parent should act on it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def run_all(
    executor: Executor,
    function: Callable[..., T],
    arguments: Sequence[tuple[Any, ...]],
    on_done: Callable[[int, int], None] | None = None,
) -> list[T]:
    """``function(*args)`` for every ``args`` on ``executor``; results in the order of ``arguments``.

    ``on_done(finished, total)`` is called as runs finish.  The first failure cancels what has
    not started and is raised.
    """
    results: list[Any] = [None] * len(arguments)
    futures: dict[Future[T], int] = {executor.submit(function, *args): i for i, args in enumerate(arguments)}
    try:
        for finished, future in enumerate(as_completed(futures), 1):
            results[futures[future]] = future.result()
            if on_done is not None:
                on_done(finished, len(arguments))
    except BaseException:
        for future in futures:
            future.cancel()
        raise
    return results
