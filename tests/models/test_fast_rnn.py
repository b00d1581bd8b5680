"""course_lib.models.fast_rnn: the fast training step computes what rnn.bptt_linear + rnn.sgd_step compute."""
import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import course_lib  # noqa: F401
from course_lib.models import fast_rnn, rnn
from helpers import raises_naming


def _problem(T=6, B=4, nx=5, nh=7, ny=3, dtype=np.float64, seed=0):
    p = rnn.init_params(nx, nh, ny, seed=seed + 1, dtype=dtype)
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (T, B, nx)).astype(dtype)
    Y = rng.uniform(-1, 1, (T, B, ny)).astype(dtype)
    return p, X, Y


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


@pytest.mark.parametrize("method", fast_rnn.ELEMENTWISE_METHODS)
@pytest.mark.parametrize("with_h0", [False, True])
@pytest.mark.parametrize("T", [1, 2, 6])
def test_gradients_match_bptt_linear_float64(method, with_h0, T):
    p, X, Y = _problem(T=T)
    h0 = np.random.default_rng(9).uniform(-1, 1, (4, 7)) if with_h0 else None
    ws = fast_rnn.make_workspace(T, 4, 5, 7, 3, np.float64, method=method)
    g, loss = fast_rnn.gradients(p, X, Y, workspace=ws, h0=h0)
    ref = rnn.bptt_linear(p, X, Y, h0)
    for name in ("Wxh", "Whh", "Why"):
        assert _rel(getattr(g, name), getattr(ref, name)) < 1e-12, name
    assert loss == pytest.approx(rnn.loss(rnn.forward(p, X, h0).Yhat, Y), rel=1e-12)


def test_gradients_float32_within_float32_accuracy():
    p, X, Y = _problem(T=8, B=16, nx=12, nh=20, ny=9, dtype=np.float32)
    g, loss = fast_rnn.gradients(p, X, Y)
    p64 = p.astype(np.float64)
    ref = rnn.bptt_linear(p64, X.astype(np.float64), Y.astype(np.float64))
    for name in ("Wxh", "Whh", "Why"):
        assert getattr(g, name).dtype == np.float32
        assert _rel(getattr(g, name), getattr(ref, name)) < 1e-5, name
    assert loss == pytest.approx(rnn.loss(rnn.forward(p64, X.astype(np.float64)).Yhat, Y.astype(np.float64)), rel=1e-5)


def test_train_step_equals_sgd_step_of_bptt_linear_and_keeps_inputs():
    p, X, Y = _problem()
    before = p.copy()
    new, loss = fast_rnn.train_step(p, X, Y, 0.05)
    ref = rnn.sgd_step(p, rnn.bptt_linear(p, X, Y), 0.05)
    for name in ("Wxh", "Whh", "Why"):
        np.testing.assert_allclose(getattr(new, name), getattr(ref, name), rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(getattr(p, name), getattr(before, name))  # not modified
    assert isinstance(new, rnn.RNNParams)
    assert loss > 0


def test_inplace_updates_the_given_arrays_and_workspace_is_reused_over_steps():
    p, X, Y = _problem(T=5, B=3)
    ws = fast_rnn.make_workspace(5, 3, 5, 7, 3, np.float64)
    ref = p.copy()
    arrays = (p.Wxh, p.Whh, p.Why)
    for _ in range(4):
        out, _ = fast_rnn.train_step(p, X, Y, 0.1, workspace=ws, inplace=True)
        ref = rnn.sgd_step(ref, rnn.bptt_linear(ref, X, Y), 0.1)
        assert all(a is b for a, b in zip((out.Wxh, out.Whh, out.Why), arrays))
    for name in ("Wxh", "Whh", "Why"):
        np.testing.assert_allclose(getattr(p, name), getattr(ref, name), rtol=1e-10, atol=1e-12)


def test_training_reduces_the_loss():
    p, X, Y = _problem(T=5, B=8, dtype=np.float32)
    ws = fast_rnn.make_workspace(5, 8, 5, 7, 3)
    losses = []
    for _ in range(30):
        p, loss = fast_rnn.train_step(p, X, Y, 0.02, workspace=ws)
        losses.append(loss)
    assert losses[-1] < 0.7 * losses[0]


@pytest.mark.parametrize("method", fast_rnn.ELEMENTWISE_METHODS)
def test_fused_tanh_float32_accuracy_and_saturation(method):
    # the step's tanh is course_lib.algorithms.activations.fast_tanh (a float32 rational approximation)
    x = np.linspace(-20, 20, 100_001).astype(np.float32)
    z = x.reshape(1, -1).copy()
    fast_rnn.fused_kernels(method).tanh_inplace(z)
    assert np.max(np.abs(z[0] - np.tanh(x.astype(np.float64)))) < 1e-6
    assert np.all(np.abs(z) <= 1.0)


def test_serial_and_prange_twins_agree():
    rng = np.random.default_rng(3)
    z, r, h = (rng.standard_normal((37, 53)).astype(np.float32) for _ in range(3))
    s, p = fast_rnn.fused_kernels("loop"), fast_rnn.fused_kernels("prange")
    a, b = z.copy(), z.copy()
    s.add_tanh_backward(a, r, h)
    p.add_tanh_backward(b, r, h)
    np.testing.assert_array_equal(a, b)
    a, b = z.copy(), z.copy()
    assert s.output_delta_loss(a, r) == pytest.approx(p.output_delta_loss(b, r), rel=1e-6)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="method"):
        fast_rnn.fused_kernels("cuda")


def test_twins_are_one_body_compiled_serial_and_parallel():
    s, p = fast_rnn.fused_kernels("loop"), fast_rnn.fused_kernels("prange")
    assert s.add_tanh.py_func.__code__ is p.add_tanh.py_func.__code__
    assert not s.add_tanh.targetoptions.get("parallel") and p.add_tanh.targetoptions.get("parallel")


def test_fused_kernels_vectorise():
    # the machine code of every float32 kernel, both twins, has packed (SIMD) floating-point instructions
    from numba import typeof
    from course_lib.experiments.matmul import simd_ops

    a = typeof(np.zeros((2, 2), np.float32))
    for method in fast_rnn.ELEMENTWISE_METHODS:
        k = fast_rnn.fused_kernels(method)
        for kernel, args in ((k.add_tanh, (a, a)), (k.output_delta_loss, (a, a)), (k.add_tanh_backward, (a, a, a))):
            assert simd_ops(kernel, args)["vector"] > 0, (method, kernel)


def test_numpy_step_matches_reference():
    p, X, Y = _problem(T=4, B=3, nx=6, nh=6, ny=6)
    step = fast_rnn.NumpyStep(4, 3, 6, 6, 6, np.float64)
    ref = rnn.sgd_step(p, rnn.bptt_linear(p, X, Y), 0.1)
    q, loss = step(p.copy(), X, Y, 0.1)
    for name in ("Wxh", "Whh", "Why"):
        np.testing.assert_allclose(getattr(q, name), getattr(ref, name), rtol=1e-12, atol=1e-14)
    assert loss == pytest.approx(rnn.loss(rnn.forward(p, X).Yhat, Y), rel=1e-12)
    with pytest.raises(ValueError, match="NumpyStep was made for"):
        step(p.copy(), X[:, :2], Y[:, :2], 0.1)


def test_step_flops_at_the_seed_size():
    assert fast_rnn.step_flops(10, 1000, 1000, 1000, 1000) == 154 * 10**9
    assert fast_rnn.step_flops(10, 1000, 1000, 1000, 1000, h0=True) == 158 * 10**9
    with pytest.raises(ValueError, match="T"):
        fast_rnn.step_flops(0, 1, 1, 1, 1)


def test_workspace_size_and_bad_dtype():
    ws = fast_rnn.make_workspace(2, 3, 4, 5, 6)
    assert ws.H.shape == (2, 3, 5) and ws.D.shape == (2, 3, 6) and ws.tmp.shape == (3, 5)
    assert ws.nbytes == 4 * (30 + 36 + 30 + 15 + 20 + 25 + 30)
    with pytest.raises(TypeError, match="dtype"):
        fast_rnn.make_workspace(2, 3, 4, 5, 6, np.int32)
    with pytest.raises(ValueError, match="batch"):
        fast_rnn.make_workspace(2, 0, 4, 5, 6)
    with pytest.raises(ValueError, match="method"):
        fast_rnn.make_workspace(2, 3, 4, 5, 6, method="threads")


def test_bad_inputs():
    p, X, Y = _problem()
    with pytest.raises(ValueError, match="X"):
        fast_rnn.train_step(p, X[..., :4], Y, 0.1)
    with pytest.raises(ValueError, match="Y"):
        fast_rnn.train_step(p, X, Y[:5], 0.1)
    with pytest.raises(TypeError, match="X: expected dtype float64"):
        fast_rnn.train_step(p, X.astype(np.float32), Y, 0.1)
    with pytest.raises(ValueError, match="lr"):
        fast_rnn.train_step(p, X, Y, -1.0)
    with pytest.raises(TypeError, match="params"):
        fast_rnn.train_step((p.Wxh, p.Whh, p.Why), X, Y, 0.1)
    with pytest.raises(ValueError, match="h0"):
        fast_rnn.train_step(p, X, Y, 0.1, h0=np.zeros((4, 6)))
    with pytest.raises(ValueError, match="workspace: made for"):
        fast_rnn.train_step(p, X, Y, 0.1, workspace=fast_rnn.make_workspace(6, 5, 5, 7, 3, np.float64))
    with pytest.raises(TypeError, match="workspace"):
        fast_rnn.train_step(p, X, Y, 0.1, workspace={})
    with pytest.raises(ValueError, match="n"):
        fast_rnn.train_step(p, X, Y, 0.1, threads=10**6)
    bad = X.copy()
    bad[2, 1, 0] = np.nan
    with pytest.raises(ValueError, match=r"X: contains 1 non-finite value\(s\); the first is nan at index \(2, 1, 0\)"):
        fast_rnn.train_step(p, bad, Y, 0.1)
    bad = Y.copy()
    bad[0, 0, 1] = np.inf
    with pytest.raises(ValueError, match="Y: contains"):
        fast_rnn.train_step(p, X, bad, 0.1)
    huge = rnn.RNNParams(p.Wxh, p.Whh, p.Why * 1e300)
    with pytest.raises(FloatingPointError, match="diverged"):
        fast_rnn.train_step(huge, X, Y * 1e300, 0.1)


def test_non_contiguous_inputs_are_copied_not_misread():
    p, X, Y = _problem()
    Xf, Yf = np.asfortranarray(X), np.asfortranarray(Y)
    g, _ = fast_rnn.gradients(p, Xf, Yf)
    ref = rnn.bptt_linear(p, X, Y)
    assert _rel(g.Whh, ref.Whh) < 1e-12


# --------------------------------------------------------------------------- bad input: named, never NaN weights
FAST = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NONFINITE = st.sampled_from([np.inf, -np.inf, np.nan])


def _rnn_problem(dtype=np.float32):
    p = rnn.init_params(3, 4, 2, seed=0, dtype=dtype)
    rng = np.random.default_rng(0)
    return p, rng.standard_normal((3, 2, 3)).astype(dtype), rng.standard_normal((3, 2, 2)).astype(dtype)


@pytest.mark.timeout(30)
@FAST
@given(NONFINITE, st.sampled_from(["X", "Y"]), st.integers(0, 2), st.integers(0, 1))
def test_fast_rnn_non_finite_inputs_are_named_never_nan_weights(bad, which, t, b):
    p, X, Y = _rnn_problem()
    arr = X if which == "X" else Y
    arr[t, b, 0] = bad
    raises_naming(ValueError, which, fast_rnn.train_step, p, X, Y, 0.1)
    raises_naming(ValueError, which, fast_rnn.gradients, p, X, Y)
    raises_naming(ValueError, which, fast_rnn.NumpyStep(3, 2, 3, 4, 2), p.copy(), X, Y, 0.1)


@pytest.mark.timeout(30)
def test_fast_rnn_inf_in_X_regression():
    # used to return a normal-looking loss and NaN weights (tanh saturates inf, Xᵀ Δz = inf * 0)
    p, X, Y = _rnn_problem()
    X[0, 0, 0] = np.inf
    raises_naming(ValueError, "X", fast_rnn.train_step, p, X, Y, 0.1)
    raises_naming(ValueError, "X", fast_rnn.gradients, p, X, Y)


@pytest.mark.timeout(30)
def test_fast_rnn_argument_names():
    p, X, Y = _rnn_problem()
    raises_naming(ValueError, "threads", fast_rnn.train_step, p, X, Y, 0.1, threads=0)  # said "n: ..."
    raises_naming(TypeError, "threads", fast_rnn.train_step, p, X, Y, 0.1, threads="2")
    raises_naming(TypeError, "inplace", fast_rnn.train_step, p, X, Y, 0.1, inplace="yes")
    raises_naming(TypeError, "h0", fast_rnn.step_flops, 2, 2, 2, 2, 2, h0="no")
    raises_naming(ValueError, "T", fast_rnn.make_workspace, 10**9, 10**4, 1, 10**4, 1)  # refused before allocating
    raises_naming(ValueError, "T", fast_rnn.NumpyStep, 10**9, 10**4, 1, 10**4, 1)
    raises_naming(TypeError, "dtype", fast_rnn.NumpyStep, 1, 1, 1, 1, 1, np.int32)
    raises_naming(ValueError, "method", fast_rnn.FusedKernels, "gpu", {})


@pytest.mark.timeout(30)
def test_descend_rejects_none_lr_and_integer_weights():
    p, X, Y = _rnn_problem()
    ws = fast_rnn.make_workspace(3, 2, 3, 4, 2)
    fast_rnn.gradients(p, X, Y, workspace=ws)
    raises_naming(TypeError, "lr", fast_rnn.descend, p, ws, None)       # used to give NaN weights
    raises_naming(ValueError, "lr", fast_rnn.descend, p, ws, np.nan)
    pint = rnn.RNNParams(*(np.ones(a.shape, np.int64) for a in (p.Wxh, p.Whh, p.Why)))
    raises_naming(TypeError, "params.Wxh", fast_rnn.descend, pint, ws, 0.1)  # used to truncate silently
    q = fast_rnn.descend(p, ws, 0.1)
    assert all(np.isfinite(a).all() for a in (q.Wxh, q.Whh, q.Why))


@pytest.mark.timeout(30)
def test_phase_functions_check_their_arguments():
    p, X, Y = _rnn_problem()
    ws = fast_rnn.make_workspace(3, 2, 3, 4, 2)
    raises_naming(TypeError, "ws", fast_rnn.forward_into, None, p, X)
    raises_naming(ValueError, "X", fast_rnn.forward_into, ws, p, X[:, :1])
    raises_naming(TypeError, "X", fast_rnn.forward_into, ws, p, X.astype(np.float64))
    raises_naming(TypeError, "params", fast_rnn.output_pre_activation_into, ws, "p")
    raises_naming(ValueError, "Y", fast_rnn.output_delta_into, ws, Y[:2])
    raises_naming(ValueError, "params.Whh", fast_rnn.backward_into, ws, dataclasses.replace(p, Whh=p.Whh[:3, :3]))
    raises_naming(ValueError, "h0", fast_rnn.weight_gradients_into, ws, X, np.zeros((2, 5), np.float32))


@pytest.mark.timeout(30)
@FAST
@given(st.one_of(st.integers(max_value=0), st.floats(), st.text(max_size=2), st.none(), st.booleans()),
       st.sampled_from(["T", "batch", "nx", "nh", "ny"]))
def test_numpy_step_and_workspace_sizes(bad, which):
    args = dict(T=2, batch=2, nx=2, nh=2, ny=2)
    args[which] = bad
    raises_naming((TypeError, ValueError), which, fast_rnn.NumpyStep, **args)
    raises_naming((TypeError, ValueError), which, fast_rnn.make_workspace, **args)


@pytest.mark.parametrize("name", ["T", "batch", "nx", "nh", "ny"])
def test_make_workspace_blames_the_huge_size(name):
    """issue 39: ``nx=10**12`` was a MemoryError, and a huge batch, nh or ny was blamed on T."""
    from helpers import raises_fast
    sizes = {"T": 8, "batch": 2, "nx": 3, "nh": 4, "ny": 2, name: 10**12}
    raises_fast(ValueError, name, fast_rnn.make_workspace, **sizes)


# --------------------------------------------------------------------------- idea 6: the batch split into row groups
@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-12), (np.float32, 2e-5)])
@pytest.mark.parametrize("T, B, groups", [(1, 2, 2), (4, 7, 3), (3, 11, 2), (2, 5, 5)])
@pytest.mark.parametrize("with_h0", [False, True])
def test_split_step_equals_sgd_step_of_bptt_linear(dtype, tol, T, B, groups, with_h0):
    p, X, Y = _problem(T=T, B=B, nx=5, nh=9, ny=3, dtype=dtype)
    h0 = np.random.default_rng(4).uniform(-1, 1, (B, 9)).astype(dtype) if with_h0 else None
    ws = fast_rnn.make_workspace(T, B, 5, 9, 3, dtype, groups=groups)
    assert isinstance(ws, fast_rnn.SplitWorkspace) and ws.groups == groups and ws.batch == B
    assert max(w.batch for w in ws.parts) - min(w.batch for w in ws.parts) <= 1   # as even as the rows allow
    p64, X64, Y64 = p.astype(np.float64), X.astype(np.float64), Y.astype(np.float64)
    h64 = None if h0 is None else h0.astype(np.float64)
    ref = rnn.sgd_step(p64, rnn.bptt_linear(p64, X64, Y64, h64), 0.05)
    for _ in range(2):  # the workspace is reused: nothing of the first step leaks into the second
        new, loss = fast_rnn.train_step(p, X, Y, 0.05, workspace=ws, h0=h0)
        for name in ("Wxh", "Whh", "Why"):
            assert getattr(new, name).dtype == dtype
            assert _rel(getattr(new, name), getattr(ref, name)) < tol, name
        assert loss == pytest.approx(rnn.loss(rnn.forward(p64, X64, h64).Yhat, Y64), rel=tol)


def test_split_gradients_equal_one_group_and_any_thread_count_gives_them():
    from threadpoolctl import threadpool_info

    from course_lib.core import backend

    p, X, Y = _problem(T=5, B=13, nx=6, nh=8, ny=4)
    one, loss1 = fast_rnn.gradients(p, X, Y, workspace=fast_rnn.make_workspace(5, 13, 6, 8, 4, np.float64, groups=1))
    ws = fast_rnn.make_workspace(5, 13, 6, 8, 4, np.float64, groups=4)
    before, blas = backend.get_threads(), [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    try:
        for threads in sorted({1, backend.max_threads()}):   # groups run in turn on 1 thread, at once on more
            backend.set_threads(threads)
            blas_now = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
            g, loss = fast_rnn.gradients(p, X, Y, workspace=ws)
            for name in ("Wxh", "Whh", "Why"):
                assert _rel(getattr(g, name), getattr(one, name)) < 1e-12, (threads, name)
            assert loss == pytest.approx(loss1, rel=1e-12)
            assert [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"] == blas_now  # restored
    finally:
        backend.set_threads(before)
        from threadpoolctl import threadpool_limits
        threadpool_limits(blas[0] if blas else None, user_api="blas")


def test_auto_groups_splits_only_when_every_group_keeps_enough_rows():
    m = fast_rnn.MIN_GROUP_ROWS
    assert fast_rnn.auto_groups(2 * m, threads=2) == 2
    assert fast_rnn.auto_groups(2 * m - 1, threads=2) == 1
    assert fast_rnn.auto_groups(16 * m, threads=16) == 16
    assert fast_rnn.auto_groups(10**6, threads=1) == 1
    assert fast_rnn.auto_groups(10**6, "prange", threads=2) == 1   # the prange passes already use the threads
    assert isinstance(fast_rnn.make_workspace(2, 3, 4, 5, 6), fast_rnn.Workspace)   # small batch: one group
    raises_naming(ValueError, "threads", fast_rnn.auto_groups, 100, threads=0)
    raises_naming(ValueError, "method", fast_rnn.auto_groups, 100, "gpu")


def test_split_workspace_bad_arguments_are_named():
    raises_naming(ValueError, "groups", fast_rnn.make_workspace, 2, 3, 4, 5, 6, groups=0)
    raises_naming(ValueError, "groups", fast_rnn.make_workspace, 2, 3, 4, 5, 6, groups=4)   # more groups than rows
    raises_naming(TypeError, "groups", fast_rnn.make_workspace, 2, 3, 4, 5, 6, groups="2")
    raises_naming(ValueError, "groups", fast_rnn.make_workspace, 2, 3, 4, 5, 6, method="prange", groups=2)
    p, X, Y = _problem(T=3, B=4)
    ws = fast_rnn.make_workspace(3, 4, 5, 7, 3, np.float64, groups=2)
    with pytest.raises(TypeError, match=r"ws: .*groups=1"):   # a phase runs on one group
        fast_rnn.forward_into(ws, p, X)
    raises_naming(ValueError, "workspace", fast_rnn.train_step, p, X[:, :3], Y[:, :3], 0.1, workspace=ws)
    with pytest.raises(TypeError, match="parts"):
        fast_rnn.SplitWorkspace(ws.parts[:1], ws.rows[:1], ws.X[:1], ws.Y[:1])
    raises_naming(ValueError, "rows", fast_rnn.SplitWorkspace, ws.parts, (slice(0, 1), slice(1, 4)), ws.X, ws.Y)
    raises_naming(ValueError, "rows", fast_rnn.SplitWorkspace, ws.parts, ws.rows[::-1], ws.X, ws.Y)  # overlap/order
    raises_naming(ValueError, "rows", fast_rnn.SplitWorkspace, ws.parts, ws.rows[:1], ws.X, ws.Y)


def test_split_step_names_a_non_finite_input_at_its_index_in_the_whole_batch():
    p, X, Y = _problem(T=3, B=6, dtype=np.float32)
    ws = fast_rnn.make_workspace(3, 6, 5, 7, 3, np.float32, groups=3)
    X[2, 5, 1] = np.nan   # row 5 is in the last group
    with pytest.raises(ValueError, match=r"X: contains 1 non-finite value\(s\); the first is nan at index \(2, 5, 1\)"):
        fast_rnn.train_step(p, X, Y, 0.1, workspace=ws)
    X[2, 5, 1] = 0
    Y[0, 3, 0] = np.inf
    raises_naming(ValueError, "Y", fast_rnn.gradients, p, X, Y, workspace=ws)


def _split_step_in_child(queue):
    p, X, Y = _problem(T=3, B=6)
    g, _ = fast_rnn.gradients(p, X, Y, workspace=fast_rnn.make_workspace(3, 6, 5, 7, 3, np.float64, groups=2))
    queue.put(_rel(g.Whh, rnn.bptt_linear(p, X, Y).Whh))


@pytest.mark.timeout(120)
def test_split_step_runs_in_a_forked_child_after_the_parent_used_its_threads():
    import multiprocessing

    from course_lib.core import backend

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork start method on this platform")
    if backend.max_threads() < 2:
        pytest.skip("one thread: the groups run in turn, no thread pool is made")
    before = backend.get_threads()
    backend.set_threads(2)
    try:
        p, X, Y = _problem(T=3, B=6)
        fast_rnn.gradients(p, X, Y, workspace=fast_rnn.make_workspace(3, 6, 5, 7, 3, np.float64, groups=2))
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        child = ctx.Process(target=_split_step_in_child, args=(queue,))
        child.start()
        child.join(60)
        assert child.exitcode == 0, "the child hung or failed (a thread pool inherited from the parent has no threads)"
        assert queue.get(timeout=5) < 1e-12
    finally:
        backend.set_threads(before)
