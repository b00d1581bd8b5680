"""course_lib.models.lstm: agreement with torch.nn.LSTM and between methods, numerical gradients,
PyTorch-layout validation; a plain call never measures or writes a file."""
import dataclasses
import types

import numpy as np
import pytest

from course_lib.models import lstm
from helpers import raises_naming


def _problem(T=5, B=3, nx=4, H=6, dtype=np.float64, seed=0):
    p = lstm.init_params(nx, H, seed=seed, dtype=dtype)
    rng = np.random.default_rng(seed + 10)
    X = rng.standard_normal((T, B, nx)).astype(dtype)
    h0 = rng.standard_normal((B, H)).astype(dtype)
    c0 = rng.standard_normal((B, H)).astype(dtype)
    return p, X, h0, c0


def test_init_params_pytorch_layout_and_range():
    p = lstm.init_params(7, 5, seed=3)
    assert p.W_ih.shape == (20, 7) and p.W_hh.shape == (20, 5) and p.b_ih.shape == (20,) and p.b_hh.shape == (20,)
    assert p.W_ih.dtype == np.float32 and p.nh == 5 and p.nx == 7
    assert np.abs(p.W_hh).max() <= 1 / np.sqrt(5)
    q = lstm.init_params(7, 5, seed=3, dtype=np.float64)
    np.testing.assert_allclose(q.W_ih, p.W_ih, rtol=1e-6)
    assert not np.array_equal(lstm.init_params(7, 5, seed=4).W_ih, p.W_ih)


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-12), (np.float32, 2e-6)])
def test_methods_agree(dtype, tol):
    p, X, h0, c0 = _problem(T=7, B=4, nx=5, H=8, dtype=dtype)
    ref, (hr, cr) = lstm.lstm_forward(p, X, h0, c0, method="naive")
    assert ref.shape == (7, 4, 8) and ref.dtype == dtype
    for v in lstm.METHODS:
        H, (hT, cT) = lstm.lstm_forward(p, X, h0, c0, method=v)
        np.testing.assert_allclose(H, ref, atol=tol, err_msg=v)
        np.testing.assert_allclose(hT, hr, atol=tol, err_msg=v)
        np.testing.assert_allclose(cT, cr, atol=tol, err_msg=v)
        np.testing.assert_array_equal(hT, H[-1])
    default, _ = lstm.lstm_forward(p, X, h0, c0)
    np.testing.assert_array_equal(default, lstm.lstm_forward(p, X, h0, c0, method="fused_pre")[0])


def test_plain_call_never_measures_or_writes(tmp_path, monkeypatch):
    """issue 11: the default is a fixed method; no autotuner, no cache file, no "auto"."""
    monkeypatch.setenv("COURSE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    import sys
    before = set(sys.modules)
    p, X, h0, c0 = _problem(dtype=np.float32)
    _, _, cache = lstm.lstm_forward(p, X, h0, c0, return_cache=True)
    assert cache.method == "fused_pre"
    assert list(tmp_path.iterdir()) == []
    assert not any(m.startswith("course_lib.experiments") for m in set(sys.modules) - before)
    with pytest.raises(ValueError, match="method: expected one of"):
        lstm.lstm_forward(p, X, method="auto")


def test_fast_activations_accuracy_float32():
    """The float32 kernels use activations.fast_tanh/fast_sigmoid: a few ulp from float64 tanh."""
    p, X, h0, c0 = _problem(T=30, B=8, nx=16, H=32, dtype=np.float64, seed=3)
    X *= 3.0  # drive the gates into saturation too
    ref, (_, c64) = lstm.lstm_forward(p, X, h0, c0, method="fused_pre")
    p32 = lstm.LSTMParams(*(a.astype(np.float32) for a in (p.W_ih, p.W_hh, p.b_ih, p.b_hh)))
    for m in ("fused", "fused_pre", "transposed"):
        out, (_, c32) = lstm.lstm_forward(p32, X.astype(np.float32), h0.astype(np.float32),
                                          c0.astype(np.float32), method=m)
        assert np.abs(out - ref).max() < 2e-5, m
        assert np.abs(c32 - c64).max() < 1e-4, m

def test_matches_torch_lstm_forward_and_backward():
    torch = pytest.importorskip("torch")
    p, X, h0, c0 = _problem(T=6, B=3, nx=4, H=5)
    m = torch.nn.LSTM(4, 5).double()
    with torch.no_grad():
        for name, arr in (("weight_ih_l0", p.W_ih), ("weight_hh_l0", p.W_hh),
                          ("bias_ih_l0", p.b_ih), ("bias_hh_l0", p.b_hh)):
            getattr(m, name).copy_(torch.from_numpy(arr))
    Xt = torch.from_numpy(X).requires_grad_()
    h0t = torch.from_numpy(h0)[None].requires_grad_()
    c0t = torch.from_numpy(c0)[None].requires_grad_()
    out, (hT, cT) = m(Xt, (h0t, c0t))
    dH = np.random.default_rng(7).standard_normal(out.shape)
    dhT = np.random.default_rng(8).standard_normal((3, 5))
    dcT = np.random.default_rng(9).standard_normal((3, 5))
    ((out * torch.from_numpy(dH)).sum() + (hT[0] * torch.from_numpy(dhT)).sum()
     + (cT[0] * torch.from_numpy(dcT)).sum()).backward()
    for v in lstm.METHODS:
        H, (h, c), cache = lstm.lstm_forward(p, X, h0[None], c0[None], method=v, return_cache=True)
        np.testing.assert_allclose(H, out.detach().numpy(), atol=1e-12)
        np.testing.assert_allclose(c, cT.detach().numpy()[0], atol=1e-12)
        g, dX, dh0, dc0 = lstm.lstm_backward(p, cache, dH, dhT, dcT)
        assert type(g) is lstm.LSTMParams and g.names() == p.names()
        for ours, theirs in ((g.W_ih, m.weight_ih_l0.grad), (g.W_hh, m.weight_hh_l0.grad),
                             (g.b_ih, m.bias_ih_l0.grad), (g.b_hh, m.bias_hh_l0.grad), (dX, Xt.grad),
                             (dh0, h0t.grad[0]), (dc0, c0t.grad[0])):
            np.testing.assert_allclose(ours, theirs.numpy(), atol=1e-10, err_msg=v)


def test_float32_close_to_torch_and_round_trip():
    torch = pytest.importorskip("torch")
    p, X, _, _ = _problem(T=20, B=8, nx=16, H=32, dtype=np.float32)
    m = p.to_torch()
    assert isinstance(m, torch.nn.LSTM) and m.weight_hh_l0.dtype == torch.float32
    with torch.no_grad():
        out, _ = m(torch.from_numpy(X))
    for v in lstm.METHODS:
        np.testing.assert_allclose(lstm.lstm_forward(p, X, method=v)[0], out.numpy(), atol=5e-6, err_msg=v)
    back = lstm.LSTMParams.from_torch(m)
    for name in ("W_ih", "W_hh", "b_ih", "b_hh"):
        np.testing.assert_array_equal(getattr(back, name), getattr(p, name))
    assert lstm.init_params(3, 2, dtype=np.float64).to_torch().weight_ih_l0.dtype == torch.float64


@pytest.mark.parametrize("method", lstm.METHODS)
def test_numerical_gradients(method):
    p, X, h0, c0 = _problem(T=4, B=2, nx=3, H=4)
    rng = np.random.default_rng(1)
    W = rng.standard_normal((4, 2, 4))
    wh, wc = rng.standard_normal((2, 4)), rng.standard_normal((2, 4))

    def loss():
        H, (hT, cT) = lstm.lstm_forward(p, X, h0, c0, method=method)
        return np.sum(W * H) + np.sum(wh * hT) + np.sum(wc * cT)

    _, _, cache = lstm.lstm_forward(p, X, h0, c0, method=method, return_cache=True)
    g, dX, dh0, dc0 = lstm.lstm_backward(p, cache, W, wh, wc)
    eps = 1e-6
    for name, arr, grad in (("W_ih", p.W_ih, g.W_ih), ("W_hh", p.W_hh, g.W_hh), ("b_ih", p.b_ih, g.b_ih),
                            ("b_hh", p.b_hh, g.b_hh), ("X", X, dX), ("h0", h0, dh0), ("c0", c0, dc0)):
        num = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            old = arr[idx]
            arr[idx] = old + eps
            up = loss()
            arr[idx] = old - eps
            down = loss()
            arr[idx] = old
            num[idx] = (up - down) / (2 * eps)
        np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-8, err_msg=f"{method}: d{name}")


def test_lstm_step_returns_gates():
    p, X, h0, c0 = _problem(T=1, B=3, nx=4, H=5)
    h, c, gates = lstm.lstm_step(p, X[0], h0, c0)
    assert gates.shape == (3, 20)
    i, f, g, o = np.split(gates, 4, axis=1)
    np.testing.assert_allclose(c, f * c0 + i * g, atol=1e-12)
    np.testing.assert_allclose(h, o * np.tanh(c), atol=1e-12)
    assert np.all((i > 0) & (i < 1)) and np.all(np.abs(g) < 1)


# --------------------------------------------------------------------------- bad input
def test_transposed_W_ih_names_pytorch_layout():
    p, X, _, _ = _problem()
    bad = lstm.LSTMParams(p.W_ih.T.copy(), p.W_hh, p.b_ih, p.b_hh)
    with pytest.raises(ValueError, match=r"W_ih: expected PyTorch layout \(4\*H, nx\) = \(24, 4\).*transposed"):
        lstm.lstm_forward(bad, X, method="fused")


def test_transposed_W_hh_names_pytorch_layout():
    p, X, _, _ = _problem()
    bad = lstm.LSTMParams(p.W_ih, p.W_hh.T.copy(), p.b_ih, p.b_hh)
    with pytest.raises(ValueError, match=r"W_hh: expected PyTorch layout \(4\*H, H\)"):
        lstm.lstm_forward(bad, X)


def test_gate_count_mismatch():
    p, X, _, _ = _problem(H=6)
    bad = lstm.LSTMParams(p.W_ih[:18], p.W_hh[:18], p.b_ih[:18], p.b_hh[:18])  # 3 gates
    with pytest.raises(ValueError, match="gate-count mismatch"):
        lstm.lstm_forward(bad, X)
    bad2 = lstm.LSTMParams(p.W_ih, p.W_hh, p.b_ih[:18], p.b_hh)
    with pytest.raises(ValueError, match=r"b_ih: expected PyTorch layout \(4\*H,\)"):
        lstm.lstm_forward(bad2, X)


def test_wrong_nx_and_state_shapes():
    p, X, h0, c0 = _problem(nx=4, H=6)
    with pytest.raises(ValueError, match=r"W_ih: expected PyTorch layout \(4\*H, nx\) = \(24, 5\)"):
        lstm.lstm_forward(p, np.zeros((2, 3, 5)))
    with pytest.raises(ValueError, match=r"h0: expected shape \(B, H\) = \(3, 6\)"):
        lstm.lstm_forward(p, X, h0[:, :5], c0)
    with pytest.raises(ValueError, match=r"c0: expected shape \(B, H\) = \(3, 6\)"):
        lstm.lstm_forward(p, X, h0, c0[:2])
    with pytest.raises(ValueError, match="method: expected one of"):
        lstm.lstm_forward(p, X, method="cudnn")
    with pytest.raises(TypeError, match="params: expected LSTMParams"):
        lstm.lstm_forward({"W_ih": 1}, X)
    with pytest.raises(ValueError, match="X: expected a 3-D array"):
        lstm.lstm_forward(p, X[0])


def test_backward_bad_input():
    p, X, h0, c0 = _problem()
    _, _, cache = lstm.lstm_forward(p, X, h0, c0, method="fused", return_cache=True)
    with pytest.raises(ValueError, match="dH: expected shape"):
        lstm.lstm_backward(p, cache, np.zeros((5, 3, 7)))
    with pytest.raises(TypeError, match="cache: expected the LSTMCache"):
        lstm.lstm_backward(p, None, np.zeros((5, 3, 6)))
    with pytest.raises(ValueError, match="dc_T: expected shape"):
        lstm.lstm_backward(p, cache, np.zeros((5, 3, 6)), None, np.zeros((3, 5)))


def test_init_params_bad_input():
    with pytest.raises(ValueError, match="nh: expected an integer >= 1"):
        lstm.init_params(3, 0)
    with pytest.raises(TypeError, match="dtype: expected float32 or float64"):
        lstm.init_params(3, 2, dtype=np.int32)


# --------------------------------------------------------------------------- bad input
# from_torch, the parameter and cache dataclasses
@pytest.mark.timeout(30)
def test_lstm_from_torch_is_validated():
    raises_naming(TypeError, "lstm", lstm.LSTMParams.from_torch, object())
    p = lstm.init_params(3, 4) if hasattr(lstm, "init_params") else None

    class T:  # a stand-in exposing torch's attribute protocol (.detach().cpu().numpy())
        def __init__(self, a):
            self.a = a

        def detach(self):
            return self

        def cpu(self):
            return self

        def numpy(self):
            return self.a

    if p is not None:
        fake = types.SimpleNamespace(weight_ih_l0=T(p.W_ih), weight_hh_l0=T(p.W_hh.T.copy()),  # transposed
                                     bias_ih_l0=T(p.b_ih), bias_hh_l0=T(p.b_hh))
        with pytest.raises(ValueError):
            lstm.LSTMParams.from_torch(fake)
        fake.num_layers = 2
        raises_naming(ValueError, "lstm", lstm.LSTMParams.from_torch, fake)


@pytest.mark.timeout(30)
def test_lstm_params_ranks_checked_layout_left_to_check_params():
    p = lstm.init_params(3, 4)
    raises_naming(ValueError, "params.b_ih", lstm.LSTMParams, p.W_ih, p.W_hh, p.W_hh, p.b_hh)
    raises_naming(TypeError, "params.W_hh", lstm.LSTMParams, p.W_ih, p.W_hh.astype(int), p.b_ih, p.b_hh)
    # a transposed weight still constructs: lstm_forward explains the layout (chapter 09's teaching moment)
    bad = lstm.LSTMParams(p.W_ih.T.copy(), p.W_hh, p.b_ih, p.b_hh)
    raises_naming(ValueError, "params.W_ih", lstm.lstm_forward, bad, np.zeros((2, 1, 3), np.float32))


@pytest.mark.timeout(30)
def test_lstm_cache_and_grads_shapes():
    p = lstm.init_params(3, 4, dtype=np.float64)
    X = np.random.default_rng(0).standard_normal((3, 2, 3))
    out = lstm.lstm_forward(p, X, method="naive", return_cache=True)
    cache = out[-1]
    raises_naming(ValueError, "cache.method", dataclasses.replace, cache, method="nope")
    raises_naming(ValueError, "cache.A", dataclasses.replace, cache, A=cache.A[..., :-1])
    raises_naming(ValueError, "cache.H", dataclasses.replace, cache, H=cache.H[:-1])
    g, dX, dh0, dc0 = lstm.lstm_backward(p, cache, np.ones_like(cache.H))
    assert type(g) is lstm.LSTMParams and dX.shape == X.shape and dh0.shape == dc0.shape == (2, p.nh)
    assert all(np.all(np.isfinite(a)) for a in (*g.arrays(), dX, dh0, dc0))


@pytest.mark.parametrize("kw, name", [(dict(seed=-1), "seed"), (dict(seed="3"), "seed"), (dict(seed=None), "seed"),
                                      (dict(seed=True), "seed"), (dict(dtype="bogus"), "dtype"), (dict(nx=10**12), "nx"),
                                      (dict(nh=10**12), "nh")])
def test_init_params_checks_seed_dtype_and_size_first(kw, name):
    """issue 39: ``nx=10**12`` was a MemoryError, a bad seed numpy's own message."""
    from helpers import raises_fast
    raises_fast((ValueError, TypeError), name, lstm.init_params, **{"nx": 3, "nh": 4, **kw})
