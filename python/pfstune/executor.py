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
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from typing import Any, TypeVar

from pfstune.errors import UserError

T = TypeVar("T")

#: How long to wait for a Dask scheduler to answer before giving up.
CONNECT_TIMEOUT_S = 10


@contextmanager
def open_executor(jobs: int | None = None, scheduler: str | None = None) -> Iterator[Executor]:
    """A local pool of ``jobs`` processes (default: one per core), or the Dask cluster at ``scheduler``."""
    if scheduler is None:
        # forkserver, not fork: a parent that already ran LightGBM has OpenMP threads, and a
        # forked child that runs LightGBM again can hang on their locks.
        context = multiprocessing.get_context("forkserver")
        with ProcessPoolExecutor(max_workers=max(1, jobs or os.cpu_count() or 1), mp_context=context) as pool:
            yield pool
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
