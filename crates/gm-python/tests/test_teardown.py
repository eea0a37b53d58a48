"""Stopping: Ctrl-C interrupts a wait promptly; abandoned iterations, closed loaders and
garbage-collected ones leave no thread behind."""

import _thread
import gc
import signal
import threading
import time

import pytest

import gm
from gm import transforms as T

from conftest import gm_thread_count


def slow_loader(folder):
    # One worker decoding whole batches: each batch takes long enough to be interrupted.
    return gm.ImageLoader(str(folder), batch_size=96, workers=1, prefetch=1, device="cpu",
                          transforms=[T.Resize((64, 64))])


def wait_for_no_gm_threads(timeout=5.0):
    end = time.monotonic() + timeout
    while gm_thread_count() and time.monotonic() < end:
        time.sleep(0.02)
    return gm_thread_count()


@pytest.fixture
def python_handles_sigint():
    # A process started in the background by a shell inherits SIGINT ignored, and then
    # interrupt_main does nothing: give Python its own handler for the test.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_interrupts_the_wait_and_joins_every_thread(many_folder, no_dist_env,
                                                           python_handles_sigint):
    loader = slow_loader(many_folder)
    assert gm_thread_count() == 0
    timer = threading.Timer(0.1, _thread.interrupt_main)
    started = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        for _ in loader:
            pass
    took = time.monotonic() - started
    timer.join()
    # The wait looks for signals every 50 ms.
    assert took < 2.0, took
    assert wait_for_no_gm_threads() == 0


def test_break_and_close_stop_the_threads(many_folder, no_dist_env):
    loader = gm.ImageLoader(str(many_folder), batch_size=8, device="cpu", transforms=[T.Resize((8, 8))])
    for _ in loader:
        assert gm_thread_count() > 0
        break
    gc.collect()
    assert wait_for_no_gm_threads() == 0
    it = iter(loader)
    next(it)
    loader.close()
    with pytest.raises(RuntimeError, match="stopped"):
        next(it)
    assert wait_for_no_gm_threads() == 0
    with gm.ImageLoader(str(many_folder), batch_size=8, device="cpu", transforms=[T.Resize((8, 8))]) as l2:
        it2 = iter(l2)
        next(it2)
    assert wait_for_no_gm_threads() == 0


def test_the_epoch_started_ahead_stops_with_the_loader(many_folder, no_dist_env):
    loader = gm.ImageLoader(str(many_folder), batch_size=32, device="cpu", transforms=[T.Resize((8, 8))])
    assert len([b for b in loader]) == 3
    # The next epoch was started behind the last batches; closing joins its threads too.
    assert gm_thread_count() > 0
    loader.close()
    assert wait_for_no_gm_threads() == 0
    for _ in loader:
        pass
    del loader
    gc.collect()
    assert wait_for_no_gm_threads() == 0


def test_a_new_iteration_replaces_the_running_one(many_folder, no_dist_env):
    loader = gm.ImageLoader(str(many_folder), batch_size=8, device="cpu", transforms=[T.Resize((8, 8))])
    first = iter(loader)
    next(first)
    second = iter(loader)
    assert next(second).position == 0
    with pytest.raises(RuntimeError, match="another"):
        next(first)
    del first, second, loader
    gc.collect()
    assert wait_for_no_gm_threads() == 0
