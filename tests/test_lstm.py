"""course_lib.models.lstm: agreement with torch.nn.LSTM and between variants, numerical gradients,
PyTorch-layout validation, the profiler and the measuring helpers."""
import numpy as np
import pytest

from course_lib.models import lstm


@pytest.fixture(autouse=True)
def _tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_CACHE_DIR", str(tmp_path / "cache"))
    from course_lib.experiments import autotune
    autotune._MEMO.clear()


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
def test_variants_agree(dtype, tol):
    p, X, h0, c0 = _problem(T=7, B=4, nx=5, H=8, dtype=dtype)
    ref, (hr, cr) = lstm.lstm_forward(p, X, h0, c0, variant="naive")
    assert ref.shape == (7, 4, 8) and ref.dtype == dtype
    for v in lstm.VARIANTS + ("auto",):
        H, (hT, cT) = lstm.lstm_forward(p, X, h0, c0, variant=v)
        np.testing.assert_allclose(H, ref, atol=tol, err_msg=v)
        np.testing.assert_allclose(hT, hr, atol=tol, err_msg=v)
        np.testing.assert_allclose(cT, cr, atol=tol, err_msg=v)
        np.testing.assert_array_equal(hT, H[-1])


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
    for v in lstm.VARIANTS:
        H, (h, c), cache = lstm.lstm_forward(p, X, h0[None], c0[None], variant=v, return_cache=True)
        np.testing.assert_allclose(H, out.detach().numpy(), atol=1e-12)
        np.testing.assert_allclose(c, cT.detach().numpy()[0], atol=1e-12)
        g = lstm.lstm_backward(p, cache, dH, dhT, dcT)
        for ours, theirs in ((g.W_ih, m.weight_ih_l0.grad), (g.W_hh, m.weight_hh_l0.grad),
                             (g.b_ih, m.bias_ih_l0.grad), (g.b_hh, m.bias_hh_l0.grad), (g.X, Xt.grad),
                             (g.h0, h0t.grad[0]), (g.c0, c0t.grad[0])):
            np.testing.assert_allclose(ours, theirs.numpy(), atol=1e-10, err_msg=v)


def test_float32_close_to_torch():
    torch = pytest.importorskip("torch")
    p, X, _, _ = _problem(T=20, B=8, nx=16, H=32, dtype=np.float32)
    m = torch.nn.LSTM(16, 32)
    with torch.no_grad():
        for name, arr in (("weight_ih_l0", p.W_ih), ("weight_hh_l0", p.W_hh),
                          ("bias_ih_l0", p.b_ih), ("bias_hh_l0", p.b_hh)):
            getattr(m, name).copy_(torch.from_numpy(arr))
        out, _ = m(torch.from_numpy(X))
    for v in lstm.VARIANTS:
        np.testing.assert_allclose(lstm.lstm_forward(p, X, variant=v)[0], out.numpy(), atol=5e-6, err_msg=v)
    assert lstm.LSTMParams.from_torch(m).W_hh.shape == (128, 32)


@pytest.mark.parametrize("variant", lstm.VARIANTS)
def test_numerical_gradients(variant):
    p, X, h0, c0 = _problem(T=4, B=2, nx=3, H=4)
    rng = np.random.default_rng(1)
    W = rng.standard_normal((4, 2, 4))
    wh, wc = rng.standard_normal((2, 4)), rng.standard_normal((2, 4))

    def loss():
        H, (hT, cT) = lstm.lstm_forward(p, X, h0, c0, variant=variant)
        return np.sum(W * H) + np.sum(wh * hT) + np.sum(wc * cT)

    _, _, cache = lstm.lstm_forward(p, X, h0, c0, variant=variant, return_cache=True)
    g = lstm.lstm_backward(p, cache, W, wh, wc)
    eps = 1e-6
    for name, arr, grad in (("W_ih", p.W_ih, g.W_ih), ("W_hh", p.W_hh, g.W_hh), ("b_ih", p.b_ih, g.b_ih),
                            ("b_hh", p.b_hh, g.b_hh), ("X", X, g.X), ("h0", h0, g.h0), ("c0", c0, g.c0)):
        num = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            old = arr[idx]
            arr[idx] = old + eps
            up = loss()
            arr[idx] = old - eps
            down = loss()
            arr[idx] = old
            num[idx] = (up - down) / (2 * eps)
        np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-8, err_msg=f"{variant}: d{name}")


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
        lstm.lstm_forward(bad, X, variant="fused")


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
    with pytest.raises(ValueError, match="variant: expected one of"):
        lstm.lstm_forward(p, X, variant="cudnn")
    with pytest.raises(TypeError, match="params: expected LSTMParams"):
        lstm.lstm_forward({"W_ih": 1}, X)
    with pytest.raises(ValueError, match="X: expected a 3-D array"):
        lstm.lstm_forward(p, X[0])


def test_backward_bad_input():
    p, X, h0, c0 = _problem()
    _, _, cache = lstm.lstm_forward(p, X, h0, c0, variant="fused", return_cache=True)
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


# --------------------------------------------------------------------------- measuring helpers
def test_profile_step_counts_calls():
    naive = lstm.profile_step(4, 8, variant="naive", repeat=1)
    pre = lstm.profile_step(4, 8, variant="fused_pre", repeat=1)
    tr = lstm.profile_step(4, 8, variant="transposed", repeat=1)
    fu = lstm.profile_step(4, 8, variant="fused", repeat=1)
    assert naive["calls_per_step"] == 34 and pre["calls_per_step"] == 2 and tr["calls_per_step"] == 2
    assert fu["calls_per_step"] == 4
    assert sum(k == "gemm" for k, _, _ in naive["ops"]) == 8
    for r in (naive, pre, tr, fu):
        assert 0 < r["gemm_share"] < 1 or r["gemm_share"] == 1
        assert r["gemm_s"] > 0 and r["elementwise_s"] > 0
    with pytest.raises(ValueError, match="variant: expected one of"):
        lstm.profile_step(4, 8, variant="auto")


def test_layout_gemm_times_and_variant_times():
    r = lstm.layout_gemm_times(4, 8, repeat=2)
    assert r["XWt_s"] > 0 and r["WXt_s"] > 0 and r["ratio"] == pytest.approx(r["XWt_s"] / r["WXt_s"])
    v = lstm.variant_times(2, 8, 4, 3, repeat=1, backward=True)
    assert set(v["ms_per_step"]) == set(lstm.VARIANTS) and v["best"] in lstm.VARIANTS
    o = lstm.overhead_vs_batch([1, 2], H=8, T=2, repeat=1)
    assert o["B"] == [1, 2] and len(o["naive"]) == 2 and all(t > 0 for t in o["fused_pre"])
    w = lstm.widget_compute(B=2, H=8, variant="transposed", T=2)
    assert set(w["ms_per_step"]) == {"naive", "transposed"}
    with pytest.raises(ValueError, match="B: expected an integer >= 1"):
        lstm.layout_gemm_times(0, 8)
    with pytest.raises(ValueError, match="variants: expected one of"):
        lstm.variant_times(2, 8, 4, variants=("naive", "cudnn"))
    with pytest.raises(ValueError, match="variant: expected one of"):
        lstm.step_time(2, 8, 4, variant="x")
