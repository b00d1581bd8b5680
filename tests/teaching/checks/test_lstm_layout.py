"""Worksheet 08 checks: pass the reference, and say which gate differs for wrong answers."""
import time

import numpy as np
import pytest

from course_lib.teaching.checks import lstm_layout as lstm_layout_checks
from course_lib.teaching.checks.core import ExerciseFailed


def _sig(v):
    return 1 / (1 + np.exp(-v))


def good_step(x, h, c, params):
    H = h.shape[1]
    z = x @ params.W_ih.T + h @ params.W_hh.T + params.b_ih + params.b_hh
    i, f, g, o = _sig(z[:, :H]), _sig(z[:, H:2 * H]), np.tanh(z[:, 2 * H:3 * H]), _sig(z[:, 3 * H:])
    c2 = f * c + i * g
    return o * np.tanh(c2), c2, np.concatenate([i, f, g, o], axis=1)


def swapped_fg(x, h, c, params):
    """Gate order i, g, f, o instead of i, f, g, o."""
    H = h.shape[1]
    z = x @ params.W_ih.T + h @ params.W_hh.T + params.b_ih + params.b_hh
    i, g, f, o = _sig(z[:, :H]), np.tanh(z[:, H:2 * H]), _sig(z[:, 2 * H:3 * H]), _sig(z[:, 3 * H:])
    c2 = f * c + i * g
    return o * np.tanh(c2), c2, np.concatenate([i, f, g, o], axis=1)


def tanh_on_o(x, h, c, params):
    hn, cn, gates = lstm_layout_checks.reference_fused_step(x, h, c, params)
    H = h.shape[1]
    z = x @ params.W_ih.T + h @ params.W_hh.T + params.b_ih + params.b_hh
    gates = gates.copy()
    gates[:, 3 * H:] = np.tanh(z[:, 3 * H:])
    return gates[:, 3 * H:] * np.tanh(cn), cn, gates


def no_ih_bias(x, h, c, params):
    H = h.shape[1]
    z = x @ params.W_ih.T + h @ params.W_hh.T + params.b_hh
    i, f, g, o = _sig(z[:, :H]), _sig(z[:, H:2 * H]), np.tanh(z[:, 2 * H:3 * H]), _sig(z[:, 3 * H:])
    c2 = f * c + i * g
    return o * np.tanh(c2), c2, np.concatenate([i, f, g, o], axis=1)


def wrong_h(x, h, c, params):
    hn, cn, gates = lstm_layout_checks.reference_fused_step(x, h, c, params)
    H = h.shape[1]
    return gates[:, 3 * H:] * cn, cn, gates


def test_fused_step_passes(capsys):
    assert lstm_layout_checks.check_fused_step(good_step) == "Exercise 9.1 passed: 5/5 cases"
    assert "Exercise 9.1 passed: 5/5 cases" in capsys.readouterr().out


def test_fused_step_names_the_gate():
    with pytest.raises(ExerciseFailed, match=r"gate f \(columns \d+:\d+ of gates\) differs"):
        lstm_layout_checks.check_fused_step(swapped_fg)
    with pytest.raises(ExerciseFailed, match=r"gate o .* differs"):
        lstm_layout_checks.check_fused_step(tanh_on_o)
    with pytest.raises(ExerciseFailed, match=r"gate i .* differs"):
        lstm_layout_checks.check_fused_step(no_ih_bias)
    with pytest.raises(ExerciseFailed, match=r"all four gates match, so look at the update of h"):
        lstm_layout_checks.check_fused_step(wrong_h)
    with pytest.raises(ExerciseFailed, match="expected a tuple of 3 outputs"):
        lstm_layout_checks.check_fused_step(lambda x, h, c, params: h)
    with pytest.raises(ExerciseFailed, match="your function raised ZeroDivisionError"):
        lstm_layout_checks.check_fused_step(lambda x, h, c, params: 1 / 0)


def test_not_implemented_passes_through():
    def todo(*a, **k):
        raise NotImplementedError("Exercise 9.1")
    with pytest.raises(NotImplementedError):
        lstm_layout_checks.check_fused_step(todo)


def test_transposed_step():
    assert lstm_layout_checks.check_step_transposed(lstm_layout_checks.reference_step_transposed).startswith("Exercise 9.2 passed")

    def not_transposed(preT, hT, cT, W_hh):
        a, b, g = lstm_layout_checks.reference_step_transposed(preT, hT, cT, W_hh)
        return a, b, g.T
    with pytest.raises(ExerciseFailed, match=r"'gatesT' has shape"):
        lstm_layout_checks.check_step_transposed(not_transposed)

    def g_sigmoid(preT, hT, cT, W_hh):
        H = hT.shape[0]
        zT = W_hh @ hT + preT
        gT = _sig(zT)
        cn = gT[H:2 * H] * cT + gT[:H] * gT[2 * H:3 * H]
        return gT[3 * H:] * np.tanh(cn), cn, gT
    with pytest.raises(ExerciseFailed, match=r"gate g \(rows \d+:\d+ of gatesT\) differs"):
        lstm_layout_checks.check_step_transposed(g_sigmoid)


def _pick(candidates, repeat=3):
    table = {}
    for name, fn in candidates.items():
        fn()
        ts = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        table[name] = float(np.median(ts)) * 1e3
    return min(table, key=table.get), table


def test_pick_fastest():
    assert lstm_layout_checks.check_pick_fastest(_pick) == "Exercise 9.3 passed"

    def seconds(candidates, repeat=3):
        best, t = _pick(candidates, repeat)
        return best, {k: v / 1e3 for k, v in t.items()}
    with pytest.raises(ExerciseFailed, match="milliseconds"):
        lstm_layout_checks.check_pick_fastest(seconds)

    def slowest(candidates, repeat=3):
        best, t = _pick(candidates, repeat)
        return max(t, key=t.get), t
    with pytest.raises(ExerciseFailed, match="your own table says 'fast'"):
        lstm_layout_checks.check_pick_fastest(slowest)

    def once(candidates, repeat=3):
        return _pick(candidates, 1)
    with pytest.raises(ExerciseFailed, match="expected at least repeat=3 timed runs"):
        lstm_layout_checks.check_pick_fastest(once)


def test_cached_pick():
    def good(cache, key, candidates):
        if key not in cache:
            cache[key] = _pick(candidates)[0]
        return cache[key]
    assert lstm_layout_checks.check_cached_pick(good) == "Exercise 9.4 passed"

    def always(cache, key, candidates):
        cache[key] = _pick(candidates)[0]
        return cache[key]
    with pytest.raises(ExerciseFailed, match="measured again"):
        lstm_layout_checks.check_cached_pick(always)

    def forgets(cache, key, candidates):
        return _pick(candidates)[0]
    with pytest.raises(ExerciseFailed, match="expected the decision stored under"):
        lstm_layout_checks.check_cached_pick(forgets)


# --------------------------------------------------------------------------- issue 17
from course_lib.models import lstm  # noqa: E402


def test_pick_fastest_rejects_the_total_of_three_calls():
    def total(candidates, repeat=3):
        table = {}
        for name, fn in candidates.items():
            fn()
            t0 = time.perf_counter()
            for _ in range(repeat):
                fn()
            table[name] = (time.perf_counter() - t0) * 1e3   # three calls, not one
        return min(table, key=table.get), table
    with pytest.raises(ExerciseFailed, match="that is the total of the calls, not the time of one call"):
        lstm_layout_checks.check_pick_fastest(total)


def test_pick_fastest_names_seconds_and_non_numbers():
    def seconds(candidates, repeat=3):
        best, t = _pick(candidates, repeat)
        return best, {k: v / 1e3 for k, v in t.items()}
    with pytest.raises(ExerciseFailed, match="that is the time in seconds"):
        lstm_layout_checks.check_pick_fastest(seconds)
    with pytest.raises(ExerciseFailed, match="expected a number"):
        lstm_layout_checks.check_pick_fastest(lambda c, repeat=3: ("fast", {k: "3 ms" for k in _pick(c)[1]}))


def test_fused_step_in_place_and_float64_note(capsys):
    def in_place(x, h, c, params):
        hn, cn, g = lstm_layout_checks.reference_fused_step(x, h, c, params)
        c[:] = cn
        return hn, cn, g
    with pytest.raises(ExerciseFailed, match="changed its input c in place"):
        lstm_layout_checks.check_fused_step(in_place)
    line = lstm_layout_checks.check_fused_step(
        lambda x, h, c, p: tuple(a.astype(np.float64) for a in good_step(x, h, c, p)))
    assert "passed: 5/5 cases" in line and "float64 where the inputs are float32" in line


def forward_one_gemm(params, X, h0, c0):
    T, B, nx = X.shape
    n = h0.shape[1]
    pre = (X.reshape(T * B, nx) @ params.W_ih.T + (params.b_ih + params.b_hh)).reshape(T, B, 4 * n)
    H = np.empty((T, B, n), X.dtype)
    h, c = h0, c0
    for t in range(T):
        z = pre[t] + h @ params.W_hh.T
        s = _sig(z)
        c = s[:, n:2 * n] * c + s[:, :n] * np.tanh(z[:, 2 * n:3 * n])
        h = s[:, 3 * n:] * np.tanh(c)
        H[t] = h
    return H


def test_one_gemm_solution_passes(capsys, fake_clock):
    fake_clock.cost(per_gate=4e-3, yours=1e-3)
    assert lstm_layout_checks.check_forward_one_gemm(forward_one_gemm) == "Exercise 9.5 passed: 4/4 cases"


def test_one_gemm_rejects_the_per_gate_step():
    with pytest.raises(ExerciseFailed, match="makes 8 matrix products per time step"):
        lstm_layout_checks.check_forward_one_gemm(lambda p, X, h0, c0: lstm.lstm_forward(p, X, h0, c0, method="naive")[0])


def test_one_gemm_rejects_the_input_projection_inside_the_loop():
    def two_per_step(params, X, h0, c0):
        T, B, _ = X.shape
        n = h0.shape[1]
        H = np.empty((T, B, n), X.dtype)
        h, c = h0, c0
        for t in range(T):
            z = X[t] @ params.W_ih.T + h @ params.W_hh.T + params.b_ih + params.b_hh
            s = _sig(z)
            c = s[:, n:2 * n] * c + s[:, :n] * np.tanh(z[:, 2 * n:3 * n])
            h = s[:, 3 * n:] * np.tanh(c)
            H[t] = h
        return H
    with pytest.raises(ExerciseFailed, match=r"(?s)makes 2 matrix products per time step.*before the loop"):
        lstm_layout_checks.check_forward_one_gemm(two_per_step)


def test_one_gemm_rejects_zero_initial_state_and_slow_elementwise(fake_clock):
    with pytest.raises(ExerciseFailed, match=r"(?s)'H' differs.*time step 0.*starts at h0, c0"):
        lstm_layout_checks.check_forward_one_gemm(
            lambda p, X, h0, c0: forward_one_gemm(p, X, np.zeros_like(h0), np.zeros_like(c0)))

    def slow(params, X, h0, c0):
        H = forward_one_gemm(params, X, h0, c0)
        out = np.empty_like(H)
        for idx in np.ndindex(H.shape):
            out[idx] = float(H[idx]) + 0.0
        return out
    fake_clock.cost(per_gate=1e-3, yours=3e-3)  # the element loop makes it 3x slower than the per-gate step
    with pytest.raises(ExerciseFailed, match=r"(?s)speed test.*only 0.33x as fast as the course's per-gate step"):
        lstm_layout_checks.check_forward_one_gemm(slow, retries=1)


# --------------------------------------------------------------------------- issue 29: gamed timers
def test_one_gemm_passes_twice_in_a_row(fake_clock):
    fake_clock.cost(per_gate=4e-3, yours=1e-3)
    for _ in range(2):
        assert lstm_layout_checks.check_forward_one_gemm(forward_one_gemm) == "Exercise 9.5 passed: 4/4 cases"


def test_one_gemm_cached_answer_while_timed_is_a_gamed_timer(fake_clock):
    cache = {}

    def cached(params, X, h0, c0):
        if X.shape == lstm_layout_checks.SPEED_SHAPE[:2] + (lstm_layout_checks.SPEED_SHAPE[2],):
            return cache.setdefault("H", forward_one_gemm(params, X, h0, c0))
        return forward_one_gemm(params, X, h0, c0)

    fake_clock.cost(per_gate=4e-3, yours=1e-3)
    with pytest.raises(ExerciseFailed, match=r"Exercise 9.5 failed on the speed test \(T=32, B=8, nx=32, H=32, "
                                             r"float32, timed call \d+\):\n  gamed timer"):
        lstm_layout_checks.check_forward_one_gemm(cached)


def test_one_gemm_mutating_the_timed_state_is_named(fake_clock):
    def clobbers(params, X, h0, c0):
        out = forward_one_gemm(params, X, h0, c0)
        if X.shape[0] == lstm_layout_checks.SPEED_SHAPE[0]:
            c0[:] = 0.0
        return out

    fake_clock.cost(per_gate=4e-3, yours=1e-3)
    with pytest.raises(ExerciseFailed, match=r"(?s)Exercise 9.5 failed on the speed test.*changed its input 'c0' in place"):
        lstm_layout_checks.check_forward_one_gemm(clobbers)


# --------------------------------------------------------------------------- issue 39, item 1: 9.1-9.3's properties
def per_gate_step(x, h, c, params):
    """The right numbers from 8 products, one per gate and operand: not the stacked product 9.1 asks for."""
    H = h.shape[1]
    blocks = [x @ params.W_ih[k * H:(k + 1) * H].T + h @ params.W_hh[k * H:(k + 1) * H].T
              + params.b_ih[k * H:(k + 1) * H] + params.b_hh[k * H:(k + 1) * H] for k in range(4)]
    i, f, g, o = _sig(blocks[0]), _sig(blocks[1]), np.tanh(blocks[2]), _sig(blocks[3])
    c2 = f * c + i * g
    return o * np.tanh(c2), c2, np.concatenate([i, f, g, o], axis=1)


def transposed_back(preT, hT, cT, W_hh):
    """The row layout of 9.1, transposed back: the right numbers, not the layout 9.2 teaches."""
    zT = (hT.T @ W_hh.T).T + preT
    H = hT.shape[0]
    gT = np.concatenate([_sig(zT[:2 * H]), np.tanh(zT[2 * H:3 * H]), _sig(zT[3 * H:])], axis=0)
    cn = gT[H:2 * H] * cT + gT[:H] * gT[2 * H:3 * H]
    return gT[3 * H:] * np.tanh(cn), cn, gT


def test_91_a_per_gate_step_is_named_by_its_products(capsys):
    with pytest.raises(ExerciseFailed, match=r"(?s)numbers are right.*8 matrix products.*one per gate"):
        lstm_layout_checks.check_fused_step(per_gate_step)
    assert lstm_layout_checks.check_fused_step(good_step) == "Exercise 9.1 passed: 5/5 cases"
    assert capsys.readouterr().out.count("Exercise 9.1 passed") == 1


def test_92_the_weights_transposed_back_are_named():
    with pytest.raises(ExerciseFailed, match=r"(?s)numbers are right.*W_hh\.T on the right.*row layout of 9\.1"):
        lstm_layout_checks.check_step_transposed(transposed_back)


def test_93_a_fixed_number_of_repeats_is_named():
    def three_always(candidates, repeat=3):
        return _pick(candidates, 3)
    with pytest.raises(ExerciseFailed, match=r"(?s)repeat=5.*ignores its `repeat` argument"):
        lstm_layout_checks.check_pick_fastest(three_always)


def test_93_a_missing_warm_up_call_is_named():
    def no_warm_up(candidates, repeat=3):
        table = {}
        for name, fn in candidates.items():
            ts = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
            table[name] = float(np.median(ts)) * 1e3
        return min(table, key=table.get), table
    with pytest.raises(ExerciseFailed, match=r"(?s)repeat=5.*5 timed calls and no warm-up call"):
        lstm_layout_checks.check_pick_fastest(no_warm_up)
