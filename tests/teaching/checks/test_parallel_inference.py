"""Worksheet 07 checks: the reference passes; deliberately wrong answers get precise messages."""
import numpy as np
import pytest

import course_lib  # noqa: F401
from course_lib.models import softmax_rnn
from course_lib.parallel import inference as inf
from course_lib.teaching.checks import ExerciseFailed, parallel_inference as parallel_inference_checks


def _schedule(T, L):
    return [[(l, d - l) for l in range(L) if 0 <= d - l < T] for d in range(T + L - 1)]


def _stable_softmax(o):
    e = np.exp(o - o.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_references_pass(capsys, fake_clock):
    """The worksheet's answers written out here (calling the course's own answers is a shortcut: test_shortcuts)."""
    fake_clock.cost(course_serial=6e-3, yours=1e-3)
    parallel_inference_checks.check_wavefront_schedule(_schedule)
    parallel_inference_checks.check_softmax(_stable_softmax)
    parallel_inference_checks.check_batched_predict(_batched)
    parallel_inference_checks.check_split_batch(
        lambda B, P: ([B // P + (r < B % P) for r in range(P)], [r * (B // P) + min(r, B % P) for r in range(P)])
        if P <= B else (_ for _ in ()).throw(ValueError("P > B")))
    parallel_inference_checks.check_gather_chunks(lambda chunks: np.concatenate(chunks, axis=1))
    out = capsys.readouterr().out.splitlines()
    assert out == ["Exercise 7.1 passed: 6/6 cases", "Exercise 7.2 passed: 5/5 cases",
                   "Exercise 7.3 passed: 5/5 cases",
                   "  speed: 6.00x as fast as the course's serial loop (one sequence at a time): between 6.00x and "
                   "6.00x in 5 interleaved rounds, at least 3x needed",
                   "Exercise 7.4 passed: 7/7 cases",
                   "Exercise 7.5 passed: 5/5 cases"]


def test_schedule_any_order_within_a_diagonal_passes():
    parallel_inference_checks.check_wavefront_schedule(lambda T, L: [list(reversed(d)) for d in _schedule(T, L)])


def test_schedule_row_major_is_explained():
    def row_by_row(T, L):  # one cell per step: the serial order
        return [[(l, t)] for l in range(L) for t in range(T)]
    with pytest.raises(ExerciseFailed, match="expected 6 diagonals \\(T \\+ L - 1\\), got 12"):
        parallel_inference_checks.check_wavefront_schedule(row_by_row)


def test_schedule_swapped_coordinates_are_explained():
    def swapped(T, L):
        return [[(t, l) for (l, t) in d] for d in inf.wavefront_schedule(T, L)]
    with pytest.raises(ExerciseFailed, match="diagonal 1 should hold the cells") as e:
        parallel_inference_checks.check_wavefront_schedule(swapped)
    assert "missing" in str(e.value) and "Hint" in str(e.value)


def test_naive_softmax_fails_on_large_logits():
    def naive(o):
        e = np.exp(o)
        return e / e.sum(axis=-1, keepdims=True)
    with np.errstate(all="ignore"):
        with pytest.raises(ExerciseFailed, match="(?s)case 4/5.*NaN or inf") as e:
            parallel_inference_checks.check_softmax(naive)
    assert "subtract the maximum" in str(e.value)


def test_softmax_over_the_wrong_axis():
    with pytest.raises(ExerciseFailed, match="'probs' differs"):
        parallel_inference_checks.check_softmax(lambda o: softmax_rnn.softmax(o, axis=0))


def test_batched_predict_without_bias_is_caught():
    def no_bias(params, X):
        T, B, _ = X.shape
        below = X
        for L in params.layers:
            h = np.zeros((B, L.W.shape[0]))
            hs = []
            for t in range(T):
                h = np.tanh(below[t] @ L.U.T + h @ L.W.T)
                hs.append(h)
            below = np.stack(hs)
        return softmax_rnn.softmax(below @ params.V.T + params.c)
    with pytest.raises(ExerciseFailed, match=r"(?s)Exercise 7.3 failed on case 1/5.*first at index \(0, 0, \d\) \(time step 0\)"):
        parallel_inference_checks.check_batched_predict(no_bias)


def test_batched_predict_wrong_shape():
    with pytest.raises(ExerciseFailed, match="has shape"):
        parallel_inference_checks.check_batched_predict(lambda params, X: softmax_rnn.forward(params, X)[0])


def test_split_batch_mistakes():
    def last_gets_rest(B, P):
        counts = [B // P] * (P - 1) + [B - (B // P) * (P - 1)]
        if P > B:
            raise ValueError("P > B")
        return counts, list(np.cumsum([0] + counts[:-1]))
    with pytest.raises(ExerciseFailed, match=r"(?s)case 2/7 \(B=7, P=3\).*counts \[2, 2, 3\], expected \[3, 2, 2\]: the extra sequences should go to the first ranks"):
        parallel_inference_checks.check_split_batch(last_gets_rest)

    def floors(B, P):
        return [B // P] * P, [r * (B // P) for r in range(P)]
    def spread(B, P):
        if P > B:
            raise ValueError("P > B")
        counts = [B // P] * (P - 1) + [B - (B // P) * (P - 1)]
        return counts, [int(v) for v in np.cumsum([0] + counts[:-1])]
    with pytest.raises(ExerciseFailed, match=r"(?s)case 6/7 \(B=100, P=7\).*differ by 2 \(balanced means at most 1\)"):
        parallel_inference_checks.check_split_batch(lambda B, P: spread(B, P) if B == 100 else inf.split_batch(B, P))

    with pytest.raises(ExerciseFailed, match="add up to 6, not B = 7: some sequences are lost"):
        parallel_inference_checks.check_split_batch(floors)

    def no_error(B, P):
        base, extra = divmod(B, P)
        counts = [base + (r < extra) for r in range(P)]
        return counts, [int(v) for v in np.cumsum([0] + counts[:-1])]
    with pytest.raises(ExerciseFailed, match="expected a ValueError: 4 ranks cannot share 3 sequences"):
        parallel_inference_checks.check_split_batch(no_error)

    def bad_offsets(B, P):
        c, o = inf.split_batch(B, P)
        return c, [0] + c[:-1]
    with pytest.raises(ExerciseFailed, match=r"(?s)offsets \[0, 3, 2\].*\(first wrong at rank 2\)"):
        parallel_inference_checks.check_split_batch(bad_offsets)


def test_gather_on_the_wrong_axis():
    with pytest.raises(ExerciseFailed, match="(?s)Exercise 7.5 failed on case 2/5.*has shape"):
        parallel_inference_checks.check_gather_chunks(lambda chunks: np.concatenate(chunks, axis=0))


def test_not_implemented_passes_through():
    def todo(*a, **kw):
        raise NotImplementedError("Exercise 7.x")
    for check in (parallel_inference_checks.check_wavefront_schedule, parallel_inference_checks.check_softmax, parallel_inference_checks.check_batched_predict,
                  parallel_inference_checks.check_split_batch, parallel_inference_checks.check_gather_chunks):
        with pytest.raises(NotImplementedError):
            check(todo)


def test_run_split_under_mpi(capsys):
    line = parallel_inference_checks.run_split_under_mpi(inf.split_batch, batch=5, P=2)
    assert "[3, 2]" in line


# --------------------------------------------------------------------------- issue 17: 7.3 as a speed exercise, holes
def _batched(params, X):
    T, B, _ = X.shape
    below = X
    for layer in params.layers:
        h = np.zeros((B, layer.W.shape[0]), X.dtype)
        states = []
        for t in range(T):
            h = np.tanh(below[t] @ layer.U.T + h @ layer.W.T + layer.b)
            states.append(h)
        below = np.stack(states)
    return softmax_rnn.softmax(below @ params.V.T + params.c)


def test_batched_predict_solution_passes_numbers_counts_and_speed(fake_clock):
    fake_clock.cost(course_serial=6e-3, yours=1e-3)  # one batched pass instead of B=6 sequential ones
    assert parallel_inference_checks.check_batched_predict(_batched) == "Exercise 7.3 passed: 5/5 cases"


def test_batched_predict_per_sequence_loop_is_counted():
    def per_sequence(params, X):
        return np.concatenate([_batched(params, X[:, b:b + 1]) for b in range(X.shape[1])], axis=1)
    with pytest.raises(ExerciseFailed, match=r"(?s)makes 102 matrix products for a batch of B=6 sequences but 17 "
                                             r"for B=1.*loops over the sequences"):
        parallel_inference_checks.check_batched_predict(per_sequence)


def test_batched_predict_recomputing_the_prefix_is_counted():
    def prefix(params, X):
        return np.stack([_batched(params, X[:t + 1])[-1] for t in range(X.shape[0])])
    with pytest.raises(ExerciseFailed, match="grows faster than T"):
        parallel_inference_checks.check_batched_predict(prefix)


def test_batched_predict_slow_elementwise_work_fails_the_speed_ratio(fake_clock):
    def slow(params, X):
        probs = _batched(params, X)
        out = np.empty_like(probs)
        for t in range(probs.shape[0]):        # per-sequence softmax, recomputed per entry: right numbers, no speed
            for b in range(probs.shape[1]):
                for v in range(probs.shape[2]):
                    out[t, b, v] = softmax_rnn.softmax(np.log(probs[t, b]))[v]
        return out
    fake_clock.cost(course_serial=1e-3, yours=2e-3)
    with pytest.raises(ExerciseFailed, match=r"(?s)speed test.*only 0.50x as fast as the course's serial loop.*at "
                                             r"least 3x"):
        parallel_inference_checks.check_batched_predict(slow, retries=1)


def test_batched_predict_in_place_change_is_named():
    def clobbers(params, X):
        out = _batched(params, X)
        params.layers[0].b += 1.0
        return out
    with pytest.raises(ExerciseFailed, match=r"changed its input params.layers\[0\].b in place"):
        parallel_inference_checks.check_batched_predict(clobbers)


def test_count_products_sees_every_spelling():
    W = parallel_inference_checks.counted(np.ones((3, 4)))
    x = np.ones((2, 3))
    n, _ = parallel_inference_checks.count_products(
        lambda: (x @ W, np.matmul(x, W), np.dot(x, W), W.T.dot(np.ones(3)), np.einsum("ij,jk->ik", x, W),
                 x @ np.concatenate([W, W], axis=1)))
    assert n == 6


def test_schedule_crash_is_explained_not_raised():
    def crashes(T, L):
        return [[(l, d - l) for l in range(L) if 0 <= d - l < T] for d in range(T + L - 1)][: T * L][T + L]
    with pytest.raises(ExerciseFailed, match=r"(?s)case \d/6 .*your function raised IndexError.*Hint: cell \(l, t\)"):
        parallel_inference_checks.check_wavefront_schedule(crashes)


def test_schedule_cells_must_be_pairs():
    with pytest.raises(ExerciseFailed, match=r"every cell must be a pair \(l, t\); got \(0, 0, 0\)"):
        parallel_inference_checks.check_wavefront_schedule(
            lambda T, L: [[(l, t, 0) for l, t in d] for d in inf.wavefront_schedule(T, L)])


def test_softmax_in_place_is_rejected_and_float64_gets_a_note(capsys):
    def in_place(o):
        o -= o.max(axis=-1, keepdims=True)
        np.exp(o, out=o)
        o /= o.sum(axis=-1, keepdims=True)
        return o
    with pytest.raises(ExerciseFailed, match="changed its input o in place"):
        parallel_inference_checks.check_softmax(in_place)
    line = parallel_inference_checks.check_softmax(lambda o: _stable_softmax(o.astype(np.float64)))
    assert "passed: 5/5 cases" in line and "float64" in line


def test_split_batch_malformed_parts_are_explained():
    with pytest.raises(ExerciseFailed, match=r"expected \(counts, offsets\) as two lists of integers"):
        parallel_inference_checks.check_split_batch(lambda B, P: (B // P, 0))


def test_a_far_too_slow_solution_fails_even_when_the_machine_is_busy(busy_machine, fake_clock):
    """Issue 29, item 4: the noise waiver is proportional -- a miss far beyond the measured spread fails."""
    fake_clock.cost(course_serial=1e-3, yours=30e-3)
    with pytest.raises(ExerciseFailed, match=r"(?s)Exercise 7.3 failed on the speed test.*only 0.03x as fast.*the "
                                             r"whole interval lies below the bar"):
        parallel_inference_checks.check_batched_predict(_batched, retries=1)


# --------------------------------------------------------------------------- issue 29: gamed timers, races
def test_batched_predict_passes_twice_in_a_row(fake_clock, capsys):
    fake_clock.cost(course_serial=6e-3, yours=1e-3)
    for _ in range(2):
        assert parallel_inference_checks.check_batched_predict(_batched) == "Exercise 7.3 passed: 5/5 cases"


def test_batched_predict_cached_answer_while_timed_is_a_gamed_timer(fake_clock):
    """Right on every untimed case, then the same answer again for every call on the timed shape."""
    cache = {}

    def cached(params, X):
        if X.shape == (16, 32, 16):
            if "probs" not in cache:
                cache["probs"] = _batched(params, X)
            return cache["probs"]
        return _batched(params, X)

    fake_clock.cost(course_serial=6e-3, yours=1e-3)
    with pytest.raises(ExerciseFailed, match=r"(?s)Exercise 7.3 failed on the speed test \(T=16, B=32, H=64, L=2, "
                                             r"float32, timed call \d+\):\n  gamed timer \(or a mistake that shows "
                                             r"only at this size\): the result returned while timed differs from the "
                                             r"reference on that same input"):
        parallel_inference_checks.check_batched_predict(cached)


def _per_layer_threads(params, X):
    """One thread per layer, no waiting for the layer below -- the race of issue 29, forced: on inputs
    longer than the old check's (T <= 12) the upper layers run to the end before layer 0 starts, so they
    read its unwritten (zero) states every time; on short inputs each layer waits for the one below."""
    import threading

    T, B, _ = X.shape
    L = len(params.layers)
    outs = [np.zeros((T, B, layer.W.shape[0]), X.dtype) for layer in params.layers]
    done = [threading.Event() for _ in range(L)]

    def run(l):
        if T <= 12 and l > 0:
            done[l - 1].wait(10)
        if T > 12 and l == 0 and L > 1:
            done[L - 1].wait(10)
        layer = params.layers[l]
        below = X if l == 0 else outs[l - 1]
        h = np.zeros((B, layer.W.shape[0]), X.dtype)
        for t in range(T):
            h = np.tanh(below[t] @ layer.U.T + h @ layer.W.T + layer.b)
            outs[l][t] = h
        done[l].set()

    threads = [threading.Thread(target=run, args=(l,)) for l in range(L)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return softmax_rnn.softmax(outs[-1] @ params.V.T + params.c)


def test_one_thread_per_layer_race_is_named():
    # right on the numbers' short cases (the old check ended there and in the counts) ...
    check_function = parallel_inference_checks.check_function
    check_function("7.3", _per_layer_threads, softmax_rnn.forward,
                   [parallel_inference_checks._predict_cases(np.random.default_rng(6), i) for i in range(5)],
                   rtol=1e-6, atol=1e-9, quiet=True)
    # ... and rejected by name on the longer runs of the race test, every time
    for _ in range(2):
        with pytest.raises(ExerciseFailed, match=r"(?s)Exercise 7.3 failed on run 1/5 of the race test \(T=40, B=3, "
                                                 r"H=6, L=3; layer 0's products slowed by 0.3 ms\).*a race"):
            parallel_inference_checks.check_batched_predict(_per_layer_threads)


def test_slow_weights_sleep_in_every_product_spelling():
    import time

    W = parallel_inference_checks.slow_weights(np.eye(3), 0.01)
    x = np.ones((2, 3))
    t0 = time.perf_counter()
    out = (x @ W, x @ W.T, np.dot(x, W), W.dot(np.ones(3)), np.einsum("ij,jk->ik", x, W))
    assert time.perf_counter() - t0 >= 0.05
    np.testing.assert_allclose(out[0], x)
    assert type(out[0]) is np.ndarray


# --------------------------------------------------------------------------- issue 39, item 1: 7.3 built on the course's cell
def _via_course_cell(params, X):
    """The right numbers and products, but every product is the course's batched cell, not the student's."""
    T, B, _ = X.shape
    below = X
    for layer in params.layers:
        h = np.zeros((B, layer.W.shape[0]), X.dtype)
        states = []
        for t in range(T):
            h = softmax_rnn.cell_step(layer, below[t], h)
            states.append(h)
        below = np.stack(states)
    return softmax_rnn.softmax(below @ params.V.T + params.c)


def test_batched_predict_built_on_the_course_cell_is_a_shortcut():
    with pytest.raises(ExerciseFailed, match=r"(?s)Exercise 7\.3 failed.*calls softmax_rnn\.cell_step, the course's own"):
        parallel_inference_checks.check_batched_predict(_via_course_cell)
