"""Concurrent calls from Python threads: each gets its own result (the GIL is released)."""
import threading

import numpy as np
from conftest import HOST_BACKENDS

import xreduce as xr


def test_threads():
    rng = np.random.default_rng(1)
    arrays = [rng.integers(-1000, 1000, size=100_003 + i).astype(np.int64) for i in range(8)]
    reducers = {b: xr.Reducer(b) for b in HOST_BACKENDS}
    errors = []

    def work(i):
        try:
            for k in range(5):
                x = arrays[(i + k) % len(arrays)]
                b = HOST_BACKENDS[(i + k) % len(HOST_BACKENDS)]
                assert xr.sum(x, backend=b) == x.sum()
                assert reducers[b].reduce(x, "max") == x.max()
                assert xr.argmin(x) == x.argmin()
                np.testing.assert_array_equal(xr.sum(x[:100_000].reshape(100, 1000), axis=1, backend=b),
                                              x[:100_000].reshape(100, 1000).sum(axis=1))
        except Exception as e:  # reported below, in the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors




def test_gil_released_during_a_reduction():
    """While another thread is inside xreduce, this one keeps running: most of its steps see the
    other thread inside a reduction (a GIL held through the call would let it see none)."""
    x = np.random.default_rng(2).random(1 << 22)
    reducer = xr.Reducer("omp" if "omp" in HOST_BACKENDS else HOST_BACKENDS[0])
    state = {"inside": False, "done": False}

    def work():
        for _ in range(20):
            state["inside"] = True
            reducer.reduce(x, exact=True, threads=1)
            state["inside"] = False
        state["done"] = True

    t = threading.Thread(target=work)
    steps = inside = 0
    t.start()
    while not state["done"]:
        steps += 1
        inside += state["inside"]
    t.join()
    assert inside > steps / 2, (inside, steps)
