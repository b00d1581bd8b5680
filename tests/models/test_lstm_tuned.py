"""course_lib.models.lstm_tuned (method="workspace"): the same numbers as fused_pre, scratch reused across
calls without results aliasing, one workspace set per thread, a bounded pool."""
import threading

import numpy as np

from course_lib.models import lstm, lstm_tuned


def _problem(T=6, B=3, nx=5, H=4, dtype=np.float64, seed=0):
    p = lstm.init_params(nx, H, seed=seed, dtype=dtype)
    rng = np.random.default_rng(seed + 1)
    return p, rng.standard_normal((T, B, nx)).astype(dtype), rng.standard_normal((T, B, H)).astype(dtype)


def test_workspace_equals_fused_pre_forward_and_backward():
    p, X, dH = _problem()
    ref = lstm.lstm_forward(p, X, method="fused_pre", return_cache=True)
    got = lstm.lstm_forward(p, X, method="workspace", return_cache=True)
    np.testing.assert_allclose(got[0], ref[0], atol=1e-13)
    np.testing.assert_allclose(got[2].A, ref[2].A, atol=1e-13)
    g_ref = lstm.lstm_backward(p, ref[2], dH)
    g_got = lstm.lstm_backward(p, got[2], dH)
    for a, b in zip(g_got[0].arrays() + list(g_got[1:]), g_ref[0].arrays() + list(g_ref[1:])):
        np.testing.assert_allclose(a, b, atol=1e-12)


def test_single_step_and_results_do_not_alias_across_calls():
    """T = 1 (W_hh's gradient is then only dZ_0^T h0); a second call of the same shape reuses the
    scratch but never the arrays handed back."""
    p, X, dH = _problem(T=1)
    H1, (h1, _), c1 = lstm.lstm_forward(p, X, method="workspace", return_cache=True)
    g1 = lstm.lstm_backward(p, c1, dH)
    keep = [H1.copy(), c1.A.copy(), g1[0].W_hh.copy(), g1[1].copy()]
    H2, _, c2 = lstm.lstm_forward(p, -X, method="workspace", return_cache=True)
    g2 = lstm.lstm_backward(p, c2, dH)
    for before, now in zip(keep, [H1, c1.A, g1[0].W_hh, g1[1]]):
        np.testing.assert_array_equal(before, now)
    assert not np.shares_memory(H1, H2) and not np.shares_memory(g1[1], g2[1])
    ref = lstm.lstm_backward(p, lstm.lstm_forward(p, X, method="fused_pre", return_cache=True)[2], dH)
    np.testing.assert_allclose(keep[2], ref[0].W_hh, atol=1e-13)


def test_workspaces_are_reused_per_shape_bounded_and_per_thread():
    lstm_tuned.release_workspaces()
    a = lstm_tuned.workspace(4, 2, 3, 5, np.float32)
    assert lstm_tuned.workspace(4, 2, 3, 5, "float32") is a
    assert a.z.shape == (2, 20) and a.dZ.shape == (4, 2, 20) and a.bias.shape == (20,)
    for T in range(5, 5 + lstm_tuned.KEEP):
        lstm_tuned.workspace(T, 2, 3, 5, np.float32)
    assert lstm_tuned.workspace(4, 2, 3, 5, np.float32) is not a     # evicted: the pool is bounded
    other = []
    t = threading.Thread(target=lambda: other.append(lstm_tuned.workspace(4, 2, 3, 5, np.float32)))
    t.start()
    t.join()
    assert other[0] is not lstm_tuned.workspace(4, 2, 3, 5, np.float32)


def test_threads_running_the_same_shape_get_the_same_numbers():
    p, X, dH = _problem(T=20, B=4, nx=8, H=16, dtype=np.float32)
    ref = lstm.lstm_forward(p, X, method="workspace")[0]
    outs = [None] * 4

    def run(k):
        for _ in range(5):
            outs[k] = lstm.lstm_forward(p, X, method="workspace")[0]
    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for o in outs:
        np.testing.assert_array_equal(o, ref)
