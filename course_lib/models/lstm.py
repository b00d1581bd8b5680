"""An LSTM layer in PyTorch's parameter layout, computed seven ways (models layer; chapter 09).

Parameters are stored exactly like ``torch.nn.LSTM`` (one layer), so weights move between the two
(:meth:`LSTMParams.from_torch` / :meth:`LSTMParams.to_torch`)::

    W_ih (4H, nx)   W_hh (4H, H)   b_ih (4H,)   b_hh (4H,)   gate blocks in the order i, f, g, o

One time step, row-vector maths on a batch ``x_t (B, nx)``, ``h, c (B, H)``::

    z = x_t W_ih^T + h W_hh^T + b_ih + b_hh          (B, 4H) = [z_i | z_f | z_g | z_o]
    i, f, o = sigmoid(z_i), sigmoid(z_f), sigmoid(z_o);   g = tanh(z_g)
    c' = f * c + i * g;   h' = o * tanh(c')

``lstm_forward(params, X, h0, c0, method="fused_pre")`` computes the same numbers in seven ways (``METHODS``):

* ``"naive"``      one GEMM per gate and operand (8 per step) and separate numpy element-wise passes;
* ``"fused"``      the four gates in ONE GEMM per step ([x_t | h] times the stacked weights) and one
                   fused numba kernel for all the element-wise work;
* ``"fused_pre"``  plus the input projection of all T steps in one big GEMM up front (Appleyard et
                   al. 2016), so each step is one ``(B, H) x (H, 4H)`` GEMM and one kernel (the default);
* ``"transposed"`` as ``fused_pre`` but the state is kept as ``h^T (H, B)`` so each step computes
                   ``Z^T = W_hh h^T`` -- the seed's ``Y^T = W X^T`` layout (EcoRNN, observation 2).
* ``"gemv"``       for small batches: as ``fused_pre`` but the recurrent product is one matrix-vector
                   product per batch row, ``z_b = W_hh h_b`` (B BLAS gemv calls). A GEMM packs (copies)
                   all of ``W_hh`` into its blocked layout on every call -- for B = 2 that copy costs
                   more than the multiplications -- while gemv streams ``W_hh`` as it is stored.
                   The backward pass uses gemv the same way.
* ``"workspace"``  the tuned path, read last (:mod:`course_lib.models.lstm_tuned`): ``fused_pre`` with
                   reused scratch, the bias inside the kernels, every GEMM in place, one pass per step.
* ``"persistent"`` the loop over T compiled (:mod:`course_lib.models.lstm_persistent`): each thread owns
                   hidden units and keeps their rows of ``W_hh`` for every step -- no BLAS call, no
                   repacking of ``W_hh`` per step; the big GEMMs outside the loop stay with the BLAS.

``provider=`` (default ``"numpy"``) names the library that computes the big products -- the input projection
of all T steps, the recurrent product of each step, the backward's per-step and weight-gradient GEMMs -- of
``fused``, ``fused_pre``, ``transposed``, ``gemv`` (its input projection) and ``workspace``
(:mod:`course_lib.algorithms.gemm`: ``"mkl"``, ``"blis"`` with the ``.[fast]`` extra); ``naive`` and
``persistent`` have no such product to hand over and ignore it. The backward uses the forward's provider.

A call computes with the method it is given and never measures anything; the fastest method for a shape
on this machine is :func:`course_lib.experiments.autotune.best_method` (measured once, cached), and
:func:`course_lib.experiments.autotune.lstm_forward_tuned` runs it.

``lstm_backward(params, cache, dH, dh_T, dc_T)`` is backpropagation through time; get the cache
with ``lstm_forward(..., return_cache=True)``, which returns ``(H, (h_T, c_T), cache)``. It returns
``(grads, dX, dh0, dc0)``: ``grads`` an :class:`LSTMParams` (the weights' gradients), then the inputs'.
The fused kernels use :mod:`course_lib.algorithms.activations` (``fast_tanh`` / ``fast_sigmoid``:
a vectorisable rational tanh in float32, exact ``tanh`` in float64).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from ..algorithms import gemm
from ..algorithms.activations import fast_sigmoid, fast_tanh, sigmoid
from ..core.params import Params
from ..core.validate import check_alloc, check_array, check_choice, check_dtype, check_int, check_positive_int, largest
from . import lstm_persistent, lstm_tuned

__all__ = [
    "GATES",
    "METHODS",
    "LSTMParams",
    "LSTMCache",
    "init_params",
    "check_params",
    "lstm_forward",
    "lstm_backward",
    "lstm_step",
]

GATES = ("i", "f", "g", "o")
METHODS = ("naive", "fused", "fused_pre", "transposed", "gemv", "workspace", "persistent")


# --------------------------------------------------------------------------- parameters
@dataclass
class LSTMParams(Params):
    """One LSTM layer, PyTorch layout: ``W_ih (4H, nx)``, ``W_hh (4H, H)``, ``b_ih, b_hh (4H,)``.
    Gradients come back in the same class (the :class:`course_lib.core.params.Params` protocol)."""

    W_ih: np.ndarray
    W_hh: np.ndarray
    b_ih: np.ndarray
    b_hh: np.ndarray

    def __post_init__(self):
        # kinds, float dtypes and ranks only (O(1)): the layout itself -- (4H, nx), (4H, H), (4H,) -- is
        # check_params' job, so that a transposed weight is refused with the message that explains it
        for name, nd in (("W_ih", 2), ("W_hh", 2), ("b_ih", 1), ("b_hh", 1)):
            setattr(self, name, check_array(getattr(self, name), f"params.{name}", ndim=nd, finite=False))

    @property
    def nh(self) -> int:
        return self.W_hh.shape[1]

    @property
    def nx(self) -> int:
        return self.W_ih.shape[1]

    @classmethod
    def from_torch(cls, lstm) -> "LSTMParams":
        """Copy the layer-0 weights of a ``torch.nn.LSTM`` (numpy arrays in the module's dtype)."""
        names = ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")
        missing = [n for n in names if not hasattr(lstm, n)]
        if missing:
            raise TypeError(f"lstm: expected a torch.nn.LSTM with biases, got {type(lstm).__name__} "
                            f"without {', '.join(missing)}")
        if getattr(lstm, "num_layers", 1) != 1 or getattr(lstm, "bidirectional", False) \
                or getattr(lstm, "proj_size", 0):
            raise ValueError("lstm: expected a one-layer, one-direction torch.nn.LSTM without projection "
                             f"(num_layers={getattr(lstm, 'num_layers', 1)}, "
                             f"bidirectional={getattr(lstm, 'bidirectional', False)}, proj_size={getattr(lstm, 'proj_size', 0)})")
        get = lambda n: getattr(lstm, n).detach().cpu().numpy().copy()  # noqa: E731
        params = cls(*(get(n) for n in names))
        check_params(params)  # shapes, float dtype, finite
        return params

    def to_torch(self):
        """A one-layer ``torch.nn.LSTM(nx, H)`` holding copies of these weights (same dtype).
        torch is imported here, only when asked for."""
        import torch

        check_params(self)
        m = torch.nn.LSTM(self.nx, self.nh).to(getattr(torch, self.dtype.name))
        with torch.no_grad():
            for name, arr in (("weight_ih_l0", self.W_ih), ("weight_hh_l0", self.W_hh),
                              ("bias_ih_l0", self.b_ih), ("bias_hh_l0", self.b_hh)):
                getattr(m, name).copy_(torch.from_numpy(np.ascontiguousarray(arr)))
        return m


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
    method: str
    provider: str = "numpy"   # the GEMM provider of the forward pass; the backward uses it too

    def __post_init__(self):  # shapes only (O(1))
        check_choice(self.method, "cache.method", METHODS)
        gemm.check_provider(self.provider, "cache.provider")
        dims: dict = {}
        for name, shape in (("X", ("T", "B", "nx")), ("h0", ("B", "H")), ("c0", ("B", "H")),
                            ("H", ("T", "B", "H")), ("C", ("T", "B", "H")), ("A", ("T", "B", "G"))):
            setattr(self, name, check_array(getattr(self, name), f"cache.{name}", shape=shape, dims=dims,
                                            finite=False))
        if dims["G"] != 4 * dims["H"]:
            raise ValueError(f"cache.A: expected shape (T, B, 4*H) (the gates i, f, g, o), got {self.A.shape}")


def init_params(nx: int, nh: int, *, seed: int = 0, dtype=np.float32) -> LSTMParams:
    """PyTorch's initialisation: every entry uniform in ``(-1/sqrt(nh), 1/sqrt(nh))``."""
    nx = check_positive_int(nx, "nx")
    nh = check_positive_int(nh, "nh")
    dtype = check_dtype(dtype, "dtype")
    check_alloc((4 * nh, nx + nh + 2), dtype, largest(nh=nh, nx=nx), what="the LSTM weights")
    rng = np.random.default_rng(check_int(seed, "seed", low=0))
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
            hint = " -- it looks transposed (nx, 4*H); pass W_ih.T"
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
# fast_tanh / fast_sigmoid are plain mul/add/div/min/max in float32, so LLVM vectorises the loops
# 16 lanes wide (a libm call per element does not vectorise and costs ~10x more); in float64
# (gradient checks) they are the exact tanh. error_model="numpy" drops the ZeroDivisionError test
# that numba otherwise puts before every division -- that test alone blocks vectorisation.
# Loops run from 0 over 1-D slices (row[:2H], row[2H:3H], ...): the same loops written as
# range(2H, 3H) over the full row did not vectorise and ran ~5x slower.
@njit(cache=True, error_model="numpy")
def _sigmoid_seg(s):
    for k in range(s.size):
        s[k] = fast_sigmoid(s[k])


@njit(cache=True, error_model="numpy")
def _tanh_seg(s):
    for k in range(s.size):
        s[k] = fast_tanh(s[k])


@njit(cache=True, error_model="numpy")
def _activate(G, H):
    """In place on ``G (B, 4H)`` pre-activations: sigmoid on i, f, o; tanh on g."""
    for b in range(G.shape[0]):
        row = G[b]
        _sigmoid_seg(row[:2 * H])
        _tanh_seg(row[2 * H:3 * H])
        _sigmoid_seg(row[3 * H:])


@njit(cache=True, error_model="numpy")
def _update_row(i, f, g, o, c_prev, c_out, h_out):
    for j in range(c_prev.size):
        c = f[j] * c_prev[j] + i[j] * g[j]
        c_out[j] = c
        h_out[j] = o[j] * fast_tanh(c)


@njit(cache=True, error_model="numpy")
def _update(A, c_prev, c_out, h_out):
    """``c' = f c + i g``, ``h' = o tanh(c')`` from the activated gates ``A (B, 4H)``."""
    B, H = c_prev.shape
    for b in range(B):
        row = A[b]
        _update_row(row[:H], row[H:2 * H], row[2 * H:3 * H], row[3 * H:], c_prev[b], c_out[b], h_out[b])


@njit(cache=True, error_model="numpy")
def cell_bias(z, bias, c_prev, c_out, h_out):
    """Fused element-wise step: ``z (B, 4H)`` holds the GEMM result (no bias); it is replaced
    by the activated gates [i|f|g|o]; writes ``c_out, h_out (B, H)``."""
    B, H4 = z.shape
    for b in range(B):
        for k in range(H4):
            z[b, k] += bias[k]
    _activate(z, H4 // 4)
    _update(z, c_prev, c_out, h_out)


@njit(cache=True, error_model="numpy")
def cell_pre(z, pre, c_prev, c_out, h_out):
    """As :func:`cell_bias` with the input projection precomputed: ``pre (B, 4H)`` (bias
    included) is replaced by the activated gates of ``z + pre``."""
    B, H4 = z.shape
    for b in range(B):
        for k in range(H4):
            pre[b, k] += z[b, k]
    _activate(pre, H4 // 4)
    _update(pre, c_prev, c_out, h_out)


@njit(cache=True, error_model="numpy")
def cell_transposed(zT, preT, col, cT_prev, AT, cT, hT):
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
            _tanh_seg(AT[k])
        else:
            _sigmoid_seg(AT[k])
    for j in range(H):
        _update_row(AT[j], AT[H + j], AT[2 * H + j], AT[3 * H + j], cT_prev[j], cT[j], hT[j])


@njit(cache=True, error_model="numpy")
def cell_backward(A, c, c_prev, dH_t, dh_rec, dc, dZ):
    """One fused backward pass over the gates. In: activated gates ``A (B, 4H)``, ``c, c_prev``,
    the output gradient ``dH_t`` plus the recurrent one ``dh_rec`` (B, H); ``dc`` (B, H) is read
    (from step t+1) and overwritten with the gradient w.r.t. ``c_prev``. Out: ``dZ (B, 4H)``."""
    B, H4 = A.shape
    H = H4 // 4
    for b in range(B):
        a, d = A[b], dZ[b]
        _backward_row(a[:H], a[H:2 * H], a[2 * H:3 * H], a[3 * H:], c[b], c_prev[b], dH_t[b], dh_rec[b], dc[b],
                      d[:H], d[H:2 * H], d[2 * H:3 * H], d[3 * H:])


@njit(cache=True, error_model="numpy")
def _backward_row(i, f, g, o, c, c_prev, dH_t, dh_rec, dc, di, df, dg, do):
    one = i.dtype.type(1.0)
    for j in range(c.size):
        tc = fast_tanh(c[j])
        dh = dH_t[j] + dh_rec[j]
        dct = dc[j] + dh * o[j] * (one - tc * tc)
        di[j] = dct * g[j] * i[j] * (one - i[j])
        df[j] = dct * c_prev[j] * f[j] * (one - f[j])
        dg[j] = dct * i[j] * (one - g[j] * g[j])
        do[j] = dh * tc * o[j] * (one - o[j])
        dc[j] = dct * f[j]


# --------------------------------------------------------------------------- the methods
def _forward_naive(p, X, h0, c0, mm=None):
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
        i, f, g, o = sigmoid(z[0]), sigmoid(z[1]), np.tanh(z[2]), sigmoid(z[3])
        c = f * c + i * g
        h = o * np.tanh(c)
        H[t], C[t] = h, c
        A[t] = np.concatenate([i, f, g, o], axis=1)
    return H, C, A


def _forward_fused(p, X, h0, c0, mm=np.matmul):
    T, B, nx = X.shape
    nh = p.nh
    H, C = np.empty((T, B, nh), X.dtype), np.empty((T, B, nh), X.dtype)
    A = np.empty((T, B, 4 * nh), X.dtype)
    W_cat_T = np.concatenate([p.W_ih, p.W_hh], axis=1).T  # (nx + H, 4H), a view of the stacked W
    bias = p.b_ih + p.b_hh
    xh = np.empty((B, nx + nh), X.dtype)  # [x_t | h_{t-1}]
    h, c = h0, c0
    for t in range(T):
        xh[:, :nx] = X[t]
        xh[:, nx:] = h
        mm(xh, W_cat_T, out=A[t])                      # ONE GEMM for all four gates
        cell_bias(A[t], bias, c, C[t], H[t])          # ONE fused element-wise kernel
        h, c = H[t], C[t]
    return H, C, A


def _forward_fused_pre(p, X, h0, c0, mm=np.matmul):
    T, B, nx = X.shape
    nh = p.nh
    H, C = np.empty((T, B, nh), X.dtype), np.empty((T, B, nh), X.dtype)
    # input projection of all T steps in one big GEMM: (T*B, nx) x (nx, 4H)
    A = mm(X.reshape(T * B, nx), p.W_ih.T).reshape(T, B, 4 * nh)
    A += p.b_ih + p.b_hh
    W_hh_T = p.W_hh.T
    z = np.empty((B, 4 * nh), X.dtype)
    h, c = h0, c0
    for t in range(T):
        mm(h, W_hh_T, out=z)                           # Z = h W_hh^T      (B, 4H)
        cell_pre(z, A[t], c, C[t], H[t])              # A[t] <- gates(Z + pre_t)
        h, c = H[t], C[t]
    return H, C, A


def _forward_transposed(p, X, h0, c0, mm=np.matmul):
    T, B, nx = X.shape
    nh = p.nh
    # Y^T = W X^T: the input projection of all steps as (4H, nx) x (nx, T*B)
    preT = mm(p.W_ih, X.reshape(T * B, nx).T)
    preT += (p.b_ih + p.b_hh)[:, None]
    HT, CT = np.empty((T, nh, B), X.dtype), np.empty((T, nh, B), X.dtype)  # states as (H, B)
    AT = np.empty((T, 4 * nh, B), X.dtype)
    hT, cT = np.ascontiguousarray(h0.T), np.ascontiguousarray(c0.T)
    zT = np.empty((4 * nh, B), X.dtype)
    for t in range(T):
        mm(p.W_hh, hT, out=zT)                         # Z^T = W_hh h^T   (4H, B)
        cell_transposed(zT, preT, t * B, cT, AT[t], CT[t], HT[t])
        hT, cT = HT[t], CT[t]
    # back to the (T, B, .) layout the caller sees: one copy each, after the loop
    return HT.transpose(0, 2, 1).copy(), CT.transpose(0, 2, 1).copy(), AT.transpose(0, 2, 1).copy()


def _forward_gemv(p, X, h0, c0, mm=np.matmul):
    T, B, nx = X.shape
    nh = p.nh
    H, C = np.empty((T, B, nh), X.dtype), np.empty((T, B, nh), X.dtype)
    A = mm(X.reshape(T * B, nx), p.W_ih.T).reshape(T, B, 4 * nh)  # input projection, as fused_pre
    A += p.b_ih + p.b_hh
    W_hh = np.ascontiguousarray(p.W_hh)
    z = np.empty((B, 4 * nh), X.dtype)
    h, c = h0, c0
    for t in range(T):
        for b in range(B):
            np.matmul(W_hh, h[b], out=z[b])            # z_b = W_hh h_b: one gemv, W_hh not repacked
        cell_pre(z, A[t], c, C[t], H[t])
        h, c = H[t], C[t]
    return H, C, A


def _forward_workspace(p, X, h0, c0, mm=np.matmul):
    return lstm_tuned.forward(p.W_ih, p.W_hh, p.b_ih, p.b_hh, X, h0, c0, mm)


def _forward_persistent(p, X, h0, c0, mm=None):
    return lstm_persistent.forward(p.W_ih, p.W_hh, p.b_ih, p.b_hh, X, h0, c0)


_FORWARD = {"naive": _forward_naive, "fused": _forward_fused, "fused_pre": _forward_fused_pre,
            "transposed": _forward_transposed, "gemv": _forward_gemv, "workspace": _forward_workspace,
            "persistent": _forward_persistent}


def lstm_forward(params: LSTMParams, X, h0=None, c0=None, *, method: str = "fused_pre",
                 return_cache: bool = False, provider: str = "numpy"):
    """Run the layer over ``X (T, B, nx)`` from ``h0, c0 (B, H)`` (zeros when None; PyTorch's
    ``(1, B, H)`` accepted).

    Returns ``(H (T, B, nh), (h_T, c_T))`` like ``torch.nn.LSTM`` (without its layer axis), or
    ``(H, (h_T, c_T), cache)`` with ``return_cache=True`` -- the cache feeds :func:`lstm_backward`.
    ``method`` is one of ``METHODS`` and ``provider`` one of :func:`course_lib.algorithms.gemm.providers`
    (all agree to round-off); they only change the speed.
    """
    method = check_choice(method, "method", METHODS)
    mm = gemm.matmul_for(provider)
    X, h0, c0 = _inputs(params, X, h0, c0)
    H, C, A = _FORWARD[method](params, X, h0, c0, mm)
    out = (H, (H[-1].copy(), C[-1].copy()))
    if return_cache:
        return out + (LSTMCache(X, h0, c0, H, C, A, method, provider),)
    return out


def lstm_step(params: LSTMParams, x, h, c):
    """One step of the reference (fused) cell: ``x (B, nx)``, ``h, c (B, H)`` ->
    ``(h', c', gates (B, 4H))`` with the activated gates [i | f | g | o]."""
    x = check_array(x, "x", ndim=2)
    Hs, (hT, cT), cache = lstm_forward(params, x[None], h, c, method="fused", return_cache=True)
    return hT, cT, cache.A[0]


# --------------------------------------------------------------------------- backward
def lstm_backward(params: LSTMParams, cache: LSTMCache, dH, dh_T=None, dc_T=None):
    """Backpropagation through time. ``dH (T, B, nh)`` is dLoss/dH; ``dh_T, dc_T (B, nh)`` are
    gradients arriving at the final state (zeros when None). Returns ``(grads, dX, dh0, dc0)``:
    ``grads`` an :class:`LSTMParams` of the weights' gradients, ``dX (T, B, nx)``, ``dh0, dc0 (B, nh)``.

    The cache of a ``"naive"`` forward runs the naive backward (per-gate GEMMs, numpy passes);
    a ``"workspace"`` cache runs the tuned one (:func:`course_lib.models.lstm_tuned.backward`), a
    ``"persistent"`` cache the compiled one (:func:`course_lib.models.lstm_persistent.backward`); every
    other cache runs the fused one: one fused kernel and one GEMM per step (B gemv calls for a
    ``"gemv"`` cache), and the weight gradients of all steps as two big GEMMs at the end."""
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
    if cache.method == "naive":
        return _backward_naive(params, cache, dH, dh, dc)
    mm = gemm.matmul_for(cache.provider)
    if cache.method in ("workspace", "persistent"):
        c, tuned = cache, lstm_tuned if cache.method == "workspace" else lstm_persistent
        gW_ih, gW_hh, db, dX, dh, dc = tuned.backward(params.W_ih, params.W_hh, c.X, c.h0, c.c0, c.H, c.C,
                                                      c.A, dH, dh, dc, *(() if tuned is lstm_persistent else (mm,)))
        return LSTMParams(gW_ih, gW_hh, db, db.copy()), dX, dh, dc
    dZ = np.empty((T, B, 4 * nh), dt)
    rows = cache.method == "gemv"
    for t in range(T - 1, -1, -1):
        c_prev = cache.C[t - 1] if t > 0 else cache.c0
        cell_backward(cache.A[t], cache.C[t], c_prev, dH[t], dh, dc, dZ[t])
        if rows:                                  # one gemv per batch row, as the gemv forward
            for b in range(B):
                np.matmul(dZ[t, b], params.W_hh, out=dh[b])
        else:
            mm(dZ[t], params.W_hh, out=dh)            # dh_{t-1} = dZ_t W_hh  (B, H)
    H_prev = np.concatenate([cache.h0[None], cache.H[:-1]], axis=0).reshape(T * B, nh)
    dZ2 = dZ.reshape(T * B, 4 * nh)
    db = dZ2.sum(axis=0)
    grads = LSTMParams(W_ih=mm(dZ2.T, cache.X.reshape(T * B, nx)), W_hh=mm(dZ2.T, H_prev), b_ih=db, b_hh=db.copy())
    return grads, mm(dZ2, params.W_ih).reshape(T, B, nx), dh, dc


def _backward_naive(p, cache, dH, dh, dc):
    T, B, nx = cache.X.shape
    nh = p.nh
    g = p.zeros_like()
    dX = np.zeros_like(cache.X)
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
            dX[t] += dz[k] @ p.W_ih[rows]
            g.W_hh[rows] += dz[k].T @ h_prev
            g.W_ih[rows] += dz[k].T @ cache.X[t]
            g.b_ih[rows] += dz[k].sum(axis=0)
    g.b_hh[:] = g.b_ih
    return g, dX, dh, dc
