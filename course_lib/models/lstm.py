"""An LSTM layer in PyTorch's parameter layout, four ways (layer 2: methods; chapter 09).

Parameters are stored exactly like ``torch.nn.LSTM`` (one layer), so weights move between the two::

    W_ih (4H, nx)   W_hh (4H, H)   b_ih (4H,)   b_hh (4H,)   gate blocks in the order i, f, g, o

One time step, row-vector maths on a batch ``x_t (B, nx)``, ``h, c (B, H)``::

    z = x_t W_ih^T + h W_hh^T + b_ih + b_hh          (B, 4H) = [z_i | z_f | z_g | z_o]
    i, f, o = sigmoid(z_i), sigmoid(z_f), sigmoid(z_o);   g = tanh(z_g)
    c' = f * c + i * g;   h' = o * tanh(c')

``lstm_forward(params, X, h0, c0, variant=...)`` computes the same numbers in four ways:

* ``"naive"``      one GEMM per gate and operand (8 per step) and separate numpy element-wise passes;
* ``"fused"``      the four gates in ONE GEMM per step ([x_t | h] times the stacked weights) and one
                   fused numba kernel for all the element-wise work;
* ``"fused_pre"``  plus the input projection of all T steps in one big GEMM up front (Appleyard et
                   al. 2016), so each step is one ``(B, H) x (H, 4H)`` GEMM and one kernel;
* ``"transposed"`` as ``fused_pre`` but the state is kept as ``h^T (H, B)`` so each step computes
                   ``Z^T = W_hh h^T`` -- the seed's ``Y^T = W X^T`` layout (EcoRNN, observation 2);
* ``"auto"``       whatever :mod:`course_lib.experiments.autotune` measured fastest for this shape here.

``lstm_backward(params, cache, dH, dh_T, dc_T)`` is backpropagation through time; get the cache
with ``lstm_forward(..., return_cache=True)``, which returns ``(H, (h_T, c_T), cache)``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numba import njit

from ..core.validate import check_array, check_choice, check_positive_int

__all__ = [
    "GATES",
    "VARIANTS",
    "LSTMParams",
    "LSTMGrads",
    "LSTMCache",
    "init_params",
    "check_params",
    "lstm_forward",
    "lstm_backward",
    "lstm_step",
    "layout_gemm_times",
    "profile_step",
    "step_time",
    "variant_times",
]

GATES = ("i", "f", "g", "o")
VARIANTS = ("naive", "fused", "fused_pre", "transposed")


# --------------------------------------------------------------------------- parameters
@dataclass
class LSTMParams:
    """One LSTM layer, PyTorch layout: ``W_ih (4H, nx)``, ``W_hh (4H, H)``, ``b_ih, b_hh (4H,)``."""

    W_ih: np.ndarray
    W_hh: np.ndarray
    b_ih: np.ndarray
    b_hh: np.ndarray

    @property
    def nh(self) -> int:
        return self.W_hh.shape[1]

    @property
    def nx(self) -> int:
        return self.W_ih.shape[1]

    @property
    def dtype(self):
        return self.W_hh.dtype

    @classmethod
    def from_torch(cls, lstm) -> "LSTMParams":
        """Copy the layer-0 weights of a ``torch.nn.LSTM`` (float32 numpy arrays)."""
        get = lambda n: getattr(lstm, n).detach().cpu().numpy().copy()  # noqa: E731
        return cls(get("weight_ih_l0"), get("weight_hh_l0"), get("bias_ih_l0"), get("bias_hh_l0"))


@dataclass
class LSTMGrads:
    """Gradients with the parameters' field names (and layouts), plus the inputs' gradients."""

    W_ih: np.ndarray
    W_hh: np.ndarray
    b_ih: np.ndarray
    b_hh: np.ndarray
    X: np.ndarray
    h0: np.ndarray
    c0: np.ndarray


@dataclass
class LSTMCache:
    """What the backward pass needs: inputs, all states ``H, C (T, B, nh)`` and the activated
    gates ``A (T, B, 4nh)`` = [i | f | g | o] of every step."""

    X: np.ndarray
    h0: np.ndarray
    c0: np.ndarray
    H: np.ndarray
    C: np.ndarray
    A: np.ndarray
    variant: str


def init_params(nx: int, nh: int, *, seed: int = 0, dtype=np.float32) -> LSTMParams:
    """PyTorch's initialisation: every entry uniform in ``(-1/sqrt(nh), 1/sqrt(nh))``."""
    nx = check_positive_int(nx, "nx")
    nh = check_positive_int(nh, "nh")
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"dtype: expected float32 or float64, got {dtype}")
    rng = np.random.default_rng(seed)
    k = 1.0 / np.sqrt(nh)
    u = lambda *shape: rng.uniform(-k, k, size=shape).astype(dtype)  # noqa: E731
    return LSTMParams(u(4 * nh, nx), u(4 * nh, nh), u(4 * nh), u(4 * nh))


def check_params(params, nx: int | None = None) -> LSTMParams:
    """Validate the PyTorch layout; a transposed or wrongly stacked weight is a ValueError that
    names the expected layout. Returns the params (arrays as given)."""
    if not isinstance(params, LSTMParams):
        raise TypeError(f"params: expected LSTMParams (see lstm.init_params), got {type(params).__name__}")
    W_hh = check_array(params.W_hh, "params.W_hh", ndim=2)
    rows, nh = W_hh.shape
    if rows != 4 * nh:
        if nh == 4 * rows:
            raise ValueError(f"params.W_hh: expected PyTorch layout (4*H, H) = ({4 * rows}, {rows}), got "
                             f"{W_hh.shape} -- it looks transposed (H, 4*H); pass W_hh.T")
        raise ValueError(f"params.W_hh: expected PyTorch layout (4*H, H) with the 4 gates i, f, g, o stacked "
                         f"along axis 0, got {W_hh.shape}: {rows} rows is not 4 x {nh} (gate-count mismatch)")
    W_ih = check_array(params.W_ih, "params.W_ih", ndim=2)
    want_nx = W_ih.shape[1] if nx is None else nx
    if W_ih.shape != (4 * nh, want_nx):
        hint = ""
        if W_ih.shape == (want_nx, 4 * nh):
            hint = f" -- it looks transposed (nx, 4*H); pass W_ih.T"
        elif W_ih.shape[0] != 4 * nh:
            hint = f" -- {W_ih.shape[0]} rows is not 4 gates x H={nh} (gate-count mismatch)"
        raise ValueError(f"params.W_ih: expected PyTorch layout (4*H, nx) = ({4 * nh}, {want_nx}), "
                         f"got {W_ih.shape}{hint}")
    for name in ("b_ih", "b_hh"):
        b = check_array(getattr(params, name), f"params.{name}", ndim=1)
        if b.shape != (4 * nh,):
            raise ValueError(f"params.{name}: expected PyTorch layout (4*H,) = ({4 * nh},) "
                             f"(gates i, f, g, o), got {b.shape}")
    dts = {a.dtype for a in (W_ih, W_hh, params.b_ih, params.b_hh)}
    if len(dts) != 1:
        raise TypeError(f"params: expected all four arrays of one dtype, got {sorted(str(d) for d in dts)}")
    return params


def _inputs(params, X, h0, c0):
    X = check_array(X, "X", ndim=3)
    T, B, nx = X.shape
    check_params(params, nx)
    nh, dt = params.nh, params.dtype
    if T < 1 or B < 1:
        raise ValueError(f"X: expected shape (T, B, nx) with T, B >= 1, got {X.shape}")
    X = np.ascontiguousarray(X, dtype=dt)
    out = []
    for name, s in (("h0", h0), ("c0", c0)):
        if s is None:
            out.append(np.zeros((B, nh), dt))
            continue
        s = check_array(s, name, ndim=(2, 3))
        if s.ndim == 3 and s.shape[0] == 1:  # PyTorch's (num_layers, B, H)
            s = s[0]
        if s.shape != (B, nh):
            raise ValueError(f"{name}: expected shape (B, H) = ({B}, {nh}) (or PyTorch's (1, B, H)), "
                             f"got {s.shape}")
        out.append(np.ascontiguousarray(s, dtype=dt))
    return X, out[0], out[1]


# --------------------------------------------------------------------------- fused kernels
# float32 runs use a rational approximation of tanh (Eigen's, max error ~3e-7, a few float32
# ulp) in float32 arithmetic: plain mul/add/div/min/max, so LLVM vectorises the loops 16 lanes
# wide; a libm call per element does not vectorise and costs ~10x more. float64 runs (gradient
# checks) use the exact np.tanh / np.exp. error_model="numpy" drops the ZeroDivisionError test
# that numba otherwise puts before every division -- that test alone blocks vectorisation.
_f32 = np.float32


@njit(cache=True, error_model="numpy")
def _tanh_r(x):
    """tanh(x) for float32 x, rational approximation, vectorisable."""
    x = min(max(x, _f32(-7.90531110763549805)), _f32(7.90531110763549805))
    x2 = x * x
    p = x2 * _f32(-2.76076847742355e-16) + _f32(2.00018790482477e-13)
    p = p * x2 + _f32(-8.60467152213735e-11)
    p = p * x2 + _f32(5.12229709037114e-08)
    p = p * x2 + _f32(1.48572235717979e-05)
    p = p * x2 + _f32(6.37261928875436e-04)
    p = p * x2 + _f32(4.89352455891786e-03)
    q = x2 * _f32(1.19825839466702e-06) + _f32(1.18534705686654e-04)
    q = q * x2 + _f32(2.26843463243900e-03)
    q = q * x2 + _f32(4.89352518554385e-03)
    return x * p / q


@njit(cache=True, error_model="numpy")
def _sig_r(x):
    """sigmoid(x) = (1 + tanh(x/2)) / 2 for float32 x, vectorisable."""
    return _f32(0.5) * _tanh_r(_f32(0.5) * x) + _f32(0.5)


@njit(cache=True, error_model="numpy")
def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


# Loops below run from 0 over 1-D slices (row[:2H], row[2H:3H], ...): the same loops written
# as range(2H, 3H) over the full row did not vectorise and ran ~5x slower.
@njit(cache=True, error_model="numpy")
def _sigmoid_seg(s, fast):
    if fast:
        for k in range(s.size):
            s[k] = _sig_r(s[k])
    else:
        for k in range(s.size):
            s[k] = _sig(s[k])


@njit(cache=True, error_model="numpy")
def _tanh_seg(s, fast):
    if fast:
        for k in range(s.size):
            s[k] = _tanh_r(s[k])
    else:
        for k in range(s.size):
            s[k] = np.tanh(s[k])


@njit(cache=True, error_model="numpy")
def _activate(G, H, fast):
    """In place on ``G (B, 4H)`` pre-activations: sigmoid on i, f, o; tanh on g."""
    for b in range(G.shape[0]):
        row = G[b]
        _sigmoid_seg(row[:2 * H], fast)
        _tanh_seg(row[2 * H:3 * H], fast)
        _sigmoid_seg(row[3 * H:], fast)


@njit(cache=True, error_model="numpy")
def _update_row(i, f, g, o, c_prev, c_out, h_out, fast):
    for j in range(c_prev.size):
        c = f[j] * c_prev[j] + i[j] * g[j]
        c_out[j] = c
        h_out[j] = o[j] * (_tanh_r(c) if fast else np.tanh(c))


@njit(cache=True, error_model="numpy")
def _update(A, c_prev, c_out, h_out, fast):
    """``c' = f c + i g``, ``h' = o tanh(c')`` from the activated gates ``A (B, 4H)``."""
    B, H = c_prev.shape
    for b in range(B):
        row = A[b]
        _update_row(row[:H], row[H:2 * H], row[2 * H:3 * H], row[3 * H:], c_prev[b], c_out[b], h_out[b], fast)


@njit(cache=True, error_model="numpy")
def _cell_bias(z, bias, c_prev, c_out, h_out, fast):
    """Fused element-wise step: ``z (B, 4H)`` holds the GEMM result (no bias); it is replaced
    by the activated gates [i|f|g|o]; writes ``c_out, h_out (B, H)``."""
    B, H4 = z.shape
    for b in range(B):
        for k in range(H4):
            z[b, k] += bias[k]
    _activate(z, H4 // 4, fast)
    _update(z, c_prev, c_out, h_out, fast)


@njit(cache=True, error_model="numpy")
def _cell_pre(z, pre, c_prev, c_out, h_out, fast):
    """As :func:`_cell_bias` with the input projection precomputed: ``pre (B, 4H)`` (bias
    included) is replaced by the activated gates of ``z + pre``."""
    B, H4 = z.shape
    for b in range(B):
        for k in range(H4):
            pre[b, k] += z[b, k]
    _activate(pre, H4 // 4, fast)
    _update(pre, c_prev, c_out, h_out, fast)


@njit(cache=True, error_model="numpy")
def _cell_transposed(zT, preT, col, cT_prev, AT, cT, hT, fast):
    """Transposed layout, vectorised along the batch: ``zT (4H, B) = W_hh h^T``, ``preT
    (4H, T*B)`` whose columns ``col:col+B`` are this step. Writes the activated gates
    ``AT (4H, B)`` and the new state ``cT, hT (H, B)``."""
    H4, B = zT.shape
    H = H4 // 4
    for k in range(H4):
        a, z, p = AT[k], zT[k], preT[k, col:col + B]
        for b in range(B):
            a[b] = z[b] + p[b]
    for k in range(H4):
        if 2 * H <= k < 3 * H:
            _tanh_seg(AT[k], fast)
        else:
            _sigmoid_seg(AT[k], fast)
    for j in range(H):
        _update_row(AT[j], AT[H + j], AT[2 * H + j], AT[3 * H + j], cT_prev[j], cT[j], hT[j], fast)


@njit(cache=True, error_model="numpy")
def _cell_backward(A, c, c_prev, dH_t, dh_rec, dc, dZ, fast):
    """One fused backward pass over the gates. In: activated gates ``A (B, 4H)``, ``c, c_prev``,
    the output gradient ``dH_t`` plus the recurrent one ``dh_rec`` (B, H); ``dc`` (B, H) is read
    (from step t+1) and overwritten with the gradient w.r.t. ``c_prev``. Out: ``dZ (B, 4H)``."""
    B, H4 = A.shape
    H = H4 // 4
    for b in range(B):
        a, d = A[b], dZ[b]
        _backward_row(a[:H], a[H:2 * H], a[2 * H:3 * H], a[3 * H:], c[b], c_prev[b], dH_t[b], dh_rec[b], dc[b],
                      d[:H], d[H:2 * H], d[2 * H:3 * H], d[3 * H:], fast)


@njit(cache=True, error_model="numpy")
def _backward_row(i, f, g, o, c, c_prev, dH_t, dh_rec, dc, di, df, dg, do, fast):
    one = i.dtype.type(1.0)
    for j in range(c.size):
        tc = _tanh_r(c[j]) if fast else np.tanh(c[j])
        dh = dH_t[j] + dh_rec[j]
        dct = dc[j] + dh * o[j] * (one - tc * tc)
        di[j] = dct * g[j] * i[j] * (one - i[j])
        df[j] = dct * c_prev[j] * f[j] * (one - f[j])
        dg[j] = dct * i[j] * (one - g[j] * g[j])
        do[j] = dh * tc * o[j] * (one - o[j])
        dc[j] = dct * f[j]


# --------------------------------------------------------------------------- the variants
def _sigmoid(z):
    return 0.5 * (np.tanh(0.5 * z) + 1.0)  # no overflow warnings for large |z|


def _forward_naive(p, X, h0, c0):
    T, B, _ = X.shape
    nh = p.nh
    H, C = np.empty((T, B, nh), X.dtype), np.empty((T, B, nh), X.dtype)
    A = np.empty((T, B, 4 * nh), X.dtype)
    h, c = h0, c0
    for t in range(T):
        z = []
        for k in range(4):  # one GEMM per gate and operand: 8 library calls
            rows = slice(k * nh, (k + 1) * nh)
            z.append(X[t] @ p.W_ih[rows].T + h @ p.W_hh[rows].T + p.b_ih[rows] + p.b_hh[rows])
        i, f, g, o = _sigmoid(z[0]), _sigmoid(z[1]), np.tanh(z[2]), _sigmoid(z[3])
        c = f * c + i * g
        h = o * np.tanh(c)
        H[t], C[t] = h, c
        A[t] = np.concatenate([i, f, g, o], axis=1)
    return H, C, A


def _forward_fused(p, X, h0, c0):
    T, B, nx = X.shape
    nh, fast = p.nh, bool(X.dtype == np.float32)
    H, C = np.empty((T, B, nh), X.dtype), np.empty((T, B, nh), X.dtype)
    A = np.empty((T, B, 4 * nh), X.dtype)
    W_cat_T = np.concatenate([p.W_ih, p.W_hh], axis=1).T  # (nx + H, 4H), a view of the stacked W
    bias = p.b_ih + p.b_hh
    xh = np.empty((B, nx + nh), X.dtype)  # [x_t | h_{t-1}]
    h, c = h0, c0
    for t in range(T):
        xh[:, :nx] = X[t]
        xh[:, nx:] = h
        np.matmul(xh, W_cat_T, out=A[t])               # ONE GEMM for all four gates
        _cell_bias(A[t], bias, c, C[t], H[t], fast)    # ONE fused element-wise kernel
        h, c = H[t], C[t]
    return H, C, A


def _forward_fused_pre(p, X, h0, c0):
    T, B, nx = X.shape
    nh, fast = p.nh, bool(X.dtype == np.float32)
    H, C = np.empty((T, B, nh), X.dtype), np.empty((T, B, nh), X.dtype)
    # input projection of all T steps in one big GEMM: (T*B, nx) x (nx, 4H)
    A = (X.reshape(T * B, nx) @ p.W_ih.T).reshape(T, B, 4 * nh)
    A += p.b_ih + p.b_hh
    W_hh_T = p.W_hh.T
    z = np.empty((B, 4 * nh), X.dtype)
    h, c = h0, c0
    for t in range(T):
        np.matmul(h, W_hh_T, out=z)                    # Z = h W_hh^T      (B, 4H)
        _cell_pre(z, A[t], c, C[t], H[t], fast)        # A[t] <- gates(Z + pre_t)
        h, c = H[t], C[t]
    return H, C, A


def _forward_transposed(p, X, h0, c0):
    T, B, nx = X.shape
    nh, fast = p.nh, bool(X.dtype == np.float32)
    # Y^T = W X^T: the input projection of all steps as (4H, nx) x (nx, T*B)
    preT = p.W_ih @ X.reshape(T * B, nx).T
    preT += (p.b_ih + p.b_hh)[:, None]
    HT, CT = np.empty((T, nh, B), X.dtype), np.empty((T, nh, B), X.dtype)  # states as (H, B)
    AT = np.empty((T, 4 * nh, B), X.dtype)
    hT, cT = np.ascontiguousarray(h0.T), np.ascontiguousarray(c0.T)
    zT = np.empty((4 * nh, B), X.dtype)
    for t in range(T):
        np.matmul(p.W_hh, hT, out=zT)                  # Z^T = W_hh h^T   (4H, B)
        _cell_transposed(zT, preT, t * B, cT, AT[t], CT[t], HT[t], fast)
        hT, cT = HT[t], CT[t]
    # back to the (T, B, .) layout the caller sees: one copy each, after the loop
    return HT.transpose(0, 2, 1).copy(), CT.transpose(0, 2, 1).copy(), AT.transpose(0, 2, 1).copy()


_FORWARD = {"naive": _forward_naive, "fused": _forward_fused, "fused_pre": _forward_fused_pre,
            "transposed": _forward_transposed}


def lstm_forward(params: LSTMParams, X, h0=None, c0=None, *, variant: str = "auto",
                 return_cache: bool = False):
    """Run the layer over ``X (T, B, nx)`` from ``h0, c0 (B, H)`` (zeros when None).

    Returns ``(H (T, B, nh), (h_T, c_T))`` like ``torch.nn.LSTM`` (without its layer axis), or
    ``(H, (h_T, c_T), cache)`` with ``return_cache=True`` -- the cache feeds :func:`lstm_backward`.
    ``variant`` is one of ``"naive", "fused", "fused_pre", "transposed", "auto"``.
    """
    variant = check_choice(variant, "variant", VARIANTS + ("auto",))
    X, h0, c0 = _inputs(params, X, h0, c0)
    if variant == "auto":
        from ..experiments.autotune import decide  # noqa: PLC0415 (autotune imports this module)

        T, B, nx = X.shape
        variant = decide(B, params.nh, nx, T, X.dtype)
    H, C, A = _FORWARD[variant](params, X, h0, c0)
    out = (H, (H[-1].copy(), C[-1].copy()))
    if return_cache:
        return out + (LSTMCache(X, h0, c0, H, C, A, variant),)
    return out


def lstm_step(params: LSTMParams, x, h, c):
    """One step of the reference (fused) cell: ``x (B, nx)``, ``h, c (B, H)`` ->
    ``(h', c', gates (B, 4H))`` with the activated gates [i | f | g | o]."""
    x = check_array(x, "x", ndim=2)
    Hs, (hT, cT), cache = lstm_forward(params, x[None], h, c, variant="fused", return_cache=True)
    return hT, cT, cache.A[0]


# --------------------------------------------------------------------------- backward
def lstm_backward(params: LSTMParams, cache: LSTMCache, dH, dh_T=None, dc_T=None) -> LSTMGrads:
    """Backpropagation through time. ``dH (T, B, nh)`` is dLoss/dH; ``dh_T, dc_T (B, nh)`` are
    gradients arriving at the final state (zeros when None). Returns :class:`LSTMGrads`.

    The cache of a ``"naive"`` forward runs the naive backward (per-gate GEMMs, numpy passes);
    every other cache runs the fused one: one fused kernel and one GEMM per step, and the
    weight gradients of all steps as two big GEMMs at the end."""
    if not isinstance(cache, LSTMCache):
        raise TypeError(f"cache: expected the LSTMCache of lstm_forward(..., return_cache=True), "
                        f"got {type(cache).__name__}")
    T, B, nx = cache.X.shape
    check_params(params, nx)
    nh, dt = params.nh, params.dtype
    dH = check_array(dH, "dH", shape=(T, B, nh))
    dH = np.ascontiguousarray(dH, dtype=dt)
    dh = np.zeros((B, nh), dt) if dh_T is None else np.array(check_array(dh_T, "dh_T", shape=(B, nh)), dtype=dt)
    dc = np.zeros((B, nh), dt) if dc_T is None else np.array(check_array(dc_T, "dc_T", shape=(B, nh)), dtype=dt)
    if cache.variant == "naive":
        return _backward_naive(params, cache, dH, dh, dc)
    dZ = np.empty((T, B, 4 * nh), dt)
    fast = bool(dt == np.float32)
    for t in range(T - 1, -1, -1):
        c_prev = cache.C[t - 1] if t > 0 else cache.c0
        _cell_backward(cache.A[t], cache.C[t], c_prev, dH[t], dh, dc, dZ[t], fast)
        np.matmul(dZ[t], params.W_hh, out=dh)     # dh_{t-1} = dZ_t W_hh  (B, H)
    H_prev = np.concatenate([cache.h0[None], cache.H[:-1]], axis=0).reshape(T * B, nh)
    dZ2 = dZ.reshape(T * B, 4 * nh)
    db = dZ2.sum(axis=0)
    return LSTMGrads(W_ih=dZ2.T @ cache.X.reshape(T * B, nx), W_hh=dZ2.T @ H_prev, b_ih=db, b_hh=db.copy(),
                     X=(dZ2 @ params.W_ih).reshape(T, B, nx), h0=dh, c0=dc)


def _backward_naive(p, cache, dH, dh, dc):
    T, B, nx = cache.X.shape
    nh = p.nh
    g = LSTMGrads(np.zeros_like(p.W_ih), np.zeros_like(p.W_hh), np.zeros_like(p.b_ih),
                  np.zeros_like(p.b_hh), np.zeros_like(cache.X), None, None)
    for t in range(T - 1, -1, -1):
        A = cache.A[t]
        i, f, gg, o = (A[:, k * nh:(k + 1) * nh] for k in range(4))
        c_prev = cache.C[t - 1] if t > 0 else cache.c0
        h_prev = cache.H[t - 1] if t > 0 else cache.h0
        tc = np.tanh(cache.C[t])
        dh = dH[t] + dh
        dct = dc + dh * o * (1 - tc * tc)
        dz = [dct * gg * i * (1 - i), dct * c_prev * f * (1 - f), dct * i * (1 - gg * gg), dh * tc * o * (1 - o)]
        dc = dct * f
        dh = np.zeros_like(dh)
        for k in range(4):  # per-gate GEMMs
            rows = slice(k * nh, (k + 1) * nh)
            dh += dz[k] @ p.W_hh[rows]
            g.X[t] += dz[k] @ p.W_ih[rows]
            g.W_hh[rows] += dz[k].T @ h_prev
            g.W_ih[rows] += dz[k].T @ cache.X[t]
            g.b_ih[rows] += dz[k].sum(axis=0)
    g.b_hh[:] = g.b_ih
    g.h0, g.c0 = dh, dc
    return g


# --------------------------------------------------------------------------- measuring
def _random_problem(B, H, nx, T, dtype, seed=0):
    p = init_params(nx, H, seed=seed, dtype=dtype)
    X = np.random.default_rng(seed + 1).standard_normal((T, B, nx)).astype(dtype)
    return p, X


def step_time(B: int, H: int, nx: int, T: int = 10, *, variant: str = "fused_pre", dtype="float32",
              backward: bool = False, repeat: int = 3) -> float:
    """Median seconds per time step of ``lstm_forward`` (+ ``lstm_backward``) at this shape."""
    for v, n in ((B, "B"), (H, "H"), (nx, "nx"), (T, "T")):
        check_positive_int(v, n)
    variant = check_choice(variant, "variant", VARIANTS)
    p, X = _random_problem(B, H, nx, T, dtype)
    dH = np.ones((T, B, H), p.dtype)

    def run():
        out = lstm_forward(p, X, variant=variant, return_cache=backward)
        if backward:
            lstm_backward(p, out[2], dH)

    from ..core.timing import measure  # noqa: PLC0415

    return measure(run, repeat=repeat, warmup=1, number=1).median / T


def variant_times(B: int, H: int, nx: int, T: int = 10, *, variants=VARIANTS, dtype="float32",
                  backward: bool = False, repeat: int = 3) -> dict:
    """Milliseconds per step of each variant at one shape, measured interleaved in one run.
    Returns ``{"B", "H", "nx", "T", "ms_per_step": {variant: ms}, "best": name}``."""
    for v, n in ((B, "B"), (H, "H"), (nx, "nx"), (T, "T")):
        check_positive_int(v, n)
    for v in variants:
        check_choice(v, "variants", VARIANTS)
    p, X = _random_problem(B, H, nx, T, dtype)
    dH = np.ones((T, B, H), p.dtype)

    def runner(v):
        def run():
            out = lstm_forward(p, X, variant=v, return_cache=backward)
            if backward:
                lstm_backward(p, out[2], dH)
        return run

    from ..core.timing import compare  # noqa: PLC0415

    cmp = compare(repeat=repeat, warmup=1, **{v: runner(v) for v in variants})
    ms = {v: cmp.timings[v].median / T * 1e3 for v in variants}
    return {"B": B, "H": H, "nx": nx, "T": T, "ms_per_step": ms, "best": min(ms, key=ms.get)}


def layout_gemm_times(B: int, H: int, nx: int | None = None, *, dtype="float32", repeat: int = 5) -> dict:
    """The seed's observation 2: ``Y = X W^T`` vs ``Y^T = W X^T`` for ``X (B, nx)``, ``W (4H, nx)``
    (both one BLAS call). Returns seconds of each and ``ratio = t(XW^T) / t(WX^T)`` (> 1: the
    transposed layout is faster)."""
    B = check_positive_int(B, "B")
    H = check_positive_int(H, "H")
    nx = H if nx is None else check_positive_int(nx, "nx")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((B, nx)).astype(dtype)
    W = rng.standard_normal((4 * H, nx)).astype(dtype)
    Y = np.empty((B, 4 * H), dtype)
    YT = np.empty((4 * H, B), dtype)
    from ..core.timing import compare  # noqa: PLC0415

    cmp = compare(repeat=repeat, warmup=1,
                  XWt=lambda: np.matmul(X, W.T, out=Y), WXt=lambda: np.matmul(W, X.T, out=YT))
    a, b = cmp.timings["XWt"].min, cmp.timings["WXt"].min
    return {"B": B, "H": H, "nx": nx, "XWt_s": a, "WXt_s": b, "ratio": a / b,
            "gflops_XWt": 2 * B * 4 * H * nx / a / 1e9, "gflops_WXt": 2 * B * 4 * H * nx / b / 1e9}


def _step_ops(variant, p, x, h, c):
    """One time step spelled out as a list of ``(kind, label, fn)`` library calls."""
    nh = p.nh
    B = x.shape[0]
    b = p.b_ih + p.b_hh
    if variant == "naive":
        ops, z = [], {}
        for k, name in enumerate(GATES):
            r = slice(k * nh, (k + 1) * nh)
            Wi, Wh, bk = p.W_ih[r].T, p.W_hh[r].T, b[r]
            ops.append(("gemm", f"x W_ih[{name}]^T", lambda Wi=Wi: x @ Wi))
            ops.append(("gemm", f"h W_hh[{name}]^T", lambda Wh=Wh: h @ Wh))
            z[name] = x @ Wi + h @ Wh + bk
            ops.append(("elementwise", f"add z_{name}", lambda: z["i"] + z["f"]))
            ops.append(("elementwise", f"add b_{name}", lambda bk=bk: z["i"] + bk))
        for name in "ifo":
            ops.append(("elementwise", f"sigmoid {name} (4 ufuncs)", lambda n=name: _sigmoid(z[n])))
        ops += [("elementwise", "tanh g", lambda: np.tanh(z["g"])),
                ("elementwise", "f * c", lambda: z["f"] * c), ("elementwise", "i * g", lambda: z["i"] * z["g"]),
                ("elementwise", "c' = . + .", lambda: c + c), ("elementwise", "tanh c'", lambda: np.tanh(c)),
                ("elementwise", "h' = o * .", lambda: z["o"] * c)]
        return ops, 8 + 8 + 3 * 4 + 6
    fast = bool(x.dtype == np.float32)
    if variant == "fused":
        xh = np.concatenate([x, h], axis=1)
        WT = np.concatenate([p.W_ih, p.W_hh], axis=1).T
        z = np.empty((B, 4 * nh), x.dtype)
        co, ho = np.empty_like(c), np.empty_like(h)
        ops = [("elementwise", "copy x_t into [x|h]", lambda: xh.__setitem__((slice(None), slice(0, x.shape[1])), x)),
               ("elementwise", "copy h into [x|h]", lambda: xh.__setitem__((slice(None), slice(x.shape[1], None)), h)),
               ("gemm", "[x|h] W^T", lambda: np.matmul(xh, WT, out=z)),
               ("elementwise", "fused gate kernel", lambda: _cell_bias(z, b, c, co, ho, fast))]
        return ops, 4
    if variant == "fused_pre":
        pre = x @ p.W_ih.T + b
        z = np.empty((B, 4 * nh), x.dtype)
        co, ho = np.empty_like(c), np.empty_like(h)
        ops = [("gemm", "h W_hh^T", lambda: np.matmul(h, p.W_hh.T, out=z)),
               ("elementwise", "fused gate kernel", lambda: _cell_pre(z, pre.copy(), c, co, ho, fast))]
        return ops, 2
    # transposed
    preT = np.ascontiguousarray(p.W_ih @ x.T + b[:, None])
    hT, cT = np.ascontiguousarray(h.T), np.ascontiguousarray(c.T)
    zT = np.empty((4 * nh, B), x.dtype)
    AT, cT2, hT2 = np.empty((4 * nh, B), x.dtype), np.empty_like(cT), np.empty_like(hT)
    ops = [("gemm", "W_hh h^T", lambda: np.matmul(p.W_hh, hT, out=zT)),
           ("elementwise", "fused gate kernel", lambda: _cell_transposed(zT, preT, 0, cT, AT, cT2, hT2, fast))]
    return ops, 2


def profile_step(B: int, H: int, nx: int | None = None, *, variant: str = "naive", dtype="float32",
                 repeat: int = 5) -> dict:
    """Profile one time step: time each library call of the step separately.

    Returns ``{"variant", "calls_per_step", "gemm_s", "elementwise_s", "gemm_share", "ops":
    [(kind, label, seconds), ...]}``. ``calls_per_step`` counts numpy/BLAS/numba calls -- the CPU
    analogue of the seed's kernel launches. (For ``fused_pre``/``transposed`` the big input GEMM
    done once for all steps is not part of the step.)"""
    B = check_positive_int(B, "B")
    H = check_positive_int(H, "H")
    nx = H if nx is None else check_positive_int(nx, "nx")
    variant = check_choice(variant, "variant", VARIANTS)
    p = init_params(nx, H, seed=0, dtype=dtype)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((B, nx)).astype(p.dtype)
    h = rng.uniform(-0.5, 0.5, (B, H)).astype(p.dtype)
    c = rng.uniform(-0.5, 0.5, (B, H)).astype(p.dtype)
    ops, n_calls = _step_ops(variant, p, x, h, c)  # naive: some rows stand for several ufunc calls
    from ..core.timing import measure  # noqa: PLC0415

    rows = [(kind, label, measure(fn, repeat=repeat, warmup=1).median) for kind, label, fn in ops]
    gemm = sum(s for k, _, s in rows if k == "gemm")
    ew = sum(s for k, _, s in rows if k == "elementwise")
    return {"variant": variant, "B": B, "H": H, "nx": nx, "calls_per_step": n_calls, "gemm_s": gemm,
            "elementwise_s": ew, "gemm_share": gemm / (gemm + ew), "ops": rows}


def overhead_vs_batch(batches, H: int = 128, *, variants=("naive", "fused_pre"), T: int = 20,
                      dtype="float32", repeat: int = 3) -> dict:
    """Microseconds per step *per sample* of each variant at each batch size: at small B the
    per-call overhead dominates, so the variant with fewer calls per step wins by more."""
    H = check_positive_int(H, "H")
    out = {"B": [int(check_positive_int(b, "batches")) for b in batches], "H": H}
    for v in variants:
        check_choice(v, "variants", VARIANTS)
        out[v] = [step_time(b, H, H, T, variant=v, dtype=dtype, repeat=repeat) / b * 1e6 for b in out["B"]]
    return out


def widget_compute(B: int = 64, H: int = 256, variant: str = "fused_pre", T: int = 10) -> dict:
    """For the chapter's slider: ms per step of ``variant`` and of ``naive`` at (B, H, nx=H)."""
    variant = check_choice(variant, "variant", VARIANTS)
    t0 = time.perf_counter()
    ms = variant_times(B, H, H, T, variants=tuple(dict.fromkeys(("naive", variant))), repeat=3)["ms_per_step"]
    return {"B": B, "H": H, "variant": variant, "ms_per_step": ms,
            "gflops": {v: 2 * B * 8 * H * H / (m * 1e-3) / 1e9 for v, m in ms.items()},
            "seconds": time.perf_counter() - t0}
