"""GRUs as time stepping: classic and implicit cells, serial and MGRIT methods (models layer).

PyTorch's layout and gate order (r, z, n), held in :class:`GRUParams`::

    W_ih (3H, nx)   W_hh (3H, H)   b_ih (3H,)   b_hh (3H,)      (rows: r | z | n)
    gi = x W_ih^T + b_ih      gh = h W_hh^T + b_hh          (each (B, 3H))
    r = sigma(gi_r + gh_r)    z = sigma(gi_z + gh_z)       n = tanh(gi_n + r * gh_n)
    classic  (explicit Euler, gamma = 1):  h' = h + gamma (1 - z) (n - h)  = z h + (1 - z) n
    implicit (Moon & Cyr, seed 002):       h' = (h + gamma (1 - z) n) / (1 + gamma (1 - z))

with the gates evaluated at the old state ``h``. ``dh/dt = -(1 - z) h + (1 - z) n`` is stiff: the
explicit step amplifies errors by ``|1 - gamma (1 - z)|``, which exceeds 1 once ``gamma (1 - z) > 2``
-- on MGRIT's coarse grids, where ``gamma = dt * m**level``. The implicit step is stable for any gamma.

On level l the coarse step from coarse point i uses gamma = dt * m**l and the input at the coarse
time point, ``x[i * m**l]`` (injection).

``method=`` chooses how the same numbers are computed: ``"sequential"`` marches step by step;
``"mgrit"`` solves the same recurrence with :class:`course_lib.algorithms.mgrit.MGRIT` (options
``m``, ``levels``, ``relax``, ``max_iter``, ``tol``, ``cycle``, ``threads``, ``diverge_factor``).
With a tight ``tol`` it agrees with ``"sequential"`` to round-off; with a small ``max_iter`` (the seed's
training budget) it is an inexact, cheaper answer.

Public API
----------
``GRUParams(W_ih, W_hh, b_ih, b_hh)`` (``from_torch``/``to_torch``; gradients use the same class)
``init_params(nx, nh, *, seed=0, dtype=np.float32)`` -> GRUParams (PyTorch's uniform init)
``gates(params, gi, h)`` -> ``(r, z, n)``, each (B, H)
``gru_cell(params, gi, h, *, implicit=False, gamma=1.0)`` -> h' (B, H) (``gi`` = input projection (B, 3H))
``gru_cell_backward(params, gi, h, dh_new, ...)`` -> ``(dh, dgi, dgh)``; ``cell_param_grads(params, X, GI, Hprev, lam, ...)``
    -> GRUParams (the per-step weight terms summed: what gru_backward and DEER's gradient share)
``gru_forward(params, X, h0=None, *, implicit=False, dt=1.0, method="sequential", return_history=False, **mgrit_opts)``
    -> H (T, B, H)
``gru_backward(params, X, H, dH, h0=None, *, implicit=False, dt=1.0, method="sequential", ...)``
    -> (grads: GRUParams, dh0 (B, H)): exact adjoint (serial) or the adjoint recurrence solved with MGRIT
``GRUClassifierParams(gru, W_out (C, H), b_out (C,))``, ``init_classifier``, ``classifier_loss``,
``classifier_predict``, ``train_classifier`` (-> core.results.TrainResult) -- GRU -> last h -> linear -> softmax
``gru_steps``, ``pad_to_hierarchy``, ``coarse_trajectory`` -- MGRIT step functions and the blow-up demo
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..algorithms.activations import sigmoid
from ..algorithms.mgrit import MGRIT
from ..core.optim import Adam
from ..core.params import Params
from ..core.results import TrainResult
from ..core.validate import (check_alloc, check_array, check_bool, check_choice, check_dtype, check_float, check_int,
                              check_count, check_ids, check_positive_int, largest)

__all__ = [
    "GRUParams",
    "GRUClassifierParams",
    "METHODS",
    "MGRIT_OPTIONS",
    "init_params",
    "check_params",
    "input_projection",
    "gates",
    "gru_cell",
    "gru_cell_backward",
    "cell_param_grads",
    "gru_forward",
    "gru_backward",
    "gru_steps",
    "pad_to_hierarchy",
    "coarse_trajectory",
    "init_classifier",
    "classifier_loss",
    "classifier_predict",
    "train_classifier",
]

METHODS = ("sequential", "mgrit")
MGRIT_OPTIONS = ("m", "levels", "relax", "max_iter", "tol", "cycle", "threads", "diverge_factor")


# --------------------------------------------------------------------------- parameters
@dataclass
class GRUParams(Params):
    """One GRU layer in PyTorch's layout: ``W_ih (3H, nx)``, ``W_hh (3H, H)``, ``b_ih, b_hh (3H,)``,
    gate rows ordered r | z | n. Gradients come back in the same class (the protocol of
    :class:`course_lib.core.params.Params`: ``names()``, ``arrays()``, ``copy()``, ``astype()``, ...)."""

    W_ih: np.ndarray
    W_hh: np.ndarray
    b_ih: np.ndarray
    b_hh: np.ndarray

    def __post_init__(self):
        # shapes and float dtypes only (O(1)); finiteness is checked where the arrays are used
        self.W_ih = check_array(self.W_ih, "params.W_ih", ndim=2, finite=False)
        nh3 = self.W_ih.shape[0]
        if nh3 % 3 or nh3 == 0:
            raise ValueError(f"params.W_ih: expected 3H rows (gates r, z, n), got shape {self.W_ih.shape}")
        nh = nh3 // 3
        for name, shape in (("W_hh", (nh3, nh)), ("b_ih", (nh3,)), ("b_hh", (nh3,))):
            setattr(self, name, check_array(getattr(self, name), f"params.{name}", shape=shape, finite=False))

    @property
    def nx(self) -> int:
        return self.W_ih.shape[1]

    @property
    def nh(self) -> int:
        return self.W_hh.shape[1]

    @classmethod
    def from_torch(cls, module) -> "GRUParams":
        """Copy the layer-0 weights of a ``torch.nn.GRU`` (numpy arrays in the module's dtype)."""
        missing = [n for n in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0") if not hasattr(module, n)]
        if missing:
            raise TypeError(f"module: expected a torch.nn.GRU with biases, got {type(module).__name__} "
                            f"without {', '.join(missing)}")
        if getattr(module, "num_layers", 1) != 1 or getattr(module, "bidirectional", False):
            raise ValueError("module: expected a one-layer, one-direction torch.nn.GRU "
                             f"(num_layers={getattr(module, 'num_layers', 1)}, bidirectional={getattr(module, 'bidirectional', False)})")
        get = lambda n: getattr(module, n).detach().cpu().numpy().copy()  # noqa: E731
        return cls(get("weight_ih_l0"), get("weight_hh_l0"), get("bias_ih_l0"), get("bias_hh_l0"))

    def to_torch(self):
        """A ``torch.nn.GRU(nx, H)`` holding these weights (float32 or float64 like the arrays).
        Imports torch only when called."""
        import torch

        module = torch.nn.GRU(self.nx, self.nh)
        module = module.double() if self.dtype == np.float64 else module.float()
        with torch.no_grad():
            for name, a in (("weight_ih_l0", self.W_ih), ("weight_hh_l0", self.W_hh),
                            ("bias_ih_l0", self.b_ih), ("bias_hh_l0", self.b_hh)):
                getattr(module, name).copy_(torch.from_numpy(np.ascontiguousarray(a)))
        return module


def init_params(nx: int, nh: int, *, seed: int = 0, dtype=np.float32) -> GRUParams:
    """PyTorch's GRU init: every entry uniform in (-1/sqrt(H), 1/sqrt(H))."""
    nx = check_positive_int(nx, "nx")
    nh = check_positive_int(nh, "nh")
    dtype = check_dtype(dtype, "dtype")
    check_alloc((3 * nh, nx + nh + 2), dtype, largest(nh=nh, nx=nx), what="the GRU weights")
    rng = np.random.default_rng(check_int(seed, "seed", low=0))
    k = 1.0 / np.sqrt(nh)
    u = lambda *s: rng.uniform(-k, k, size=s).astype(dtype)  # noqa: E731
    return GRUParams(u(3 * nh, nx), u(3 * nh, nh), u(3 * nh), u(3 * nh))


def _as_params(params) -> GRUParams:
    if isinstance(params, GRUParams):
        return params
    raise TypeError(f"params: expected GRUParams (see gru.init_params), got {type(params).__name__}")


def check_params(params) -> tuple[GRUParams, int, int]:
    """Validate GRU parameters (shapes, float dtypes, finite); returns ``(params, nx, H)``."""
    return _check_params(params)


def _check_params(params) -> tuple[GRUParams, int, int]:
    p = _as_params(params)
    dims: dict = {}
    check_array(p.W_ih, "params.W_ih", shape=("3H", "nx"), dims=dims)
    check_array(p.W_hh, "params.W_hh", shape=("3H", None), dims=dims)
    nh3 = dims["3H"]
    if nh3 % 3:
        raise ValueError(f"params.W_ih: expected 3H rows (gates r, z, n), got {nh3}")
    nh = nh3 // 3
    check_array(p.W_hh, "params.W_hh", shape=(3 * nh, nh))
    check_array(p.b_ih, "params.b_ih", shape=(3 * nh,))
    check_array(p.b_hh, "params.b_hh", shape=(3 * nh,))
    return p, dims["nx"], nh


def _check_inputs(params, X, h0):
    p, nx, nh = _check_params(params)
    dims = {"nx": nx}
    X = check_array(X, "X", shape=("T", "B", "nx"), dims=dims, min_size={"T": 1})
    B = dims["B"]
    if h0 is None:
        h0 = np.zeros((B, nh), dtype=p.W_hh.dtype)
    else:
        h0 = check_array(h0, "h0", shape=(B, nh))
    return p, X, h0, nx, nh


def input_projection(params, X) -> np.ndarray:
    """``gi = X W_ih^T + b_ih`` for all time steps at once: (T, B, nx) -> (T, B, 3H) (one big GEMM).
    ``X`` may also be one step ``(B, nx)``."""
    p, nx, _ = _check_params(params)
    X = check_array(X, "X", ndim=(2, 3), dtype="float")
    if X.shape[-1] != nx:
        raise ValueError(f"X: expected the last axis to be nx = {nx} (params.W_ih is {p.W_ih.shape}), got shape {X.shape}")
    return _input_projection(p, X)


def _input_projection(p: GRUParams, X) -> np.ndarray:
    return X @ p.W_ih.T + p.b_ih


# --------------------------------------------------------------------------- the cell
def _check_cell(params, gi, h, dh_new=None, implicit=False, gamma=1.0):
    """Validate a cell's arguments: ``gi (..., 3H)``, ``h (..., H)`` with the same leading shape."""
    p, _, nh = _check_params(params)
    h = check_array(h, "h", ndim=range(1, 8))
    if h.shape[-1] != nh:
        raise ValueError(f"h: expected the last axis to be H = {nh} (params.W_hh is {p.W_hh.shape}), got shape {h.shape}")
    gi = check_array(gi, "gi", shape=h.shape[:-1] + (3 * nh,))
    if dh_new is not None:
        dh_new = check_array(dh_new, "dh_new", shape=h.shape)
    check_bool(implicit, "implicit")
    gamma = check_float(gamma, "gamma", low=0.0)
    return p, gi, h, dh_new, gamma


def gates_unchecked(p: GRUParams, gi, h):
    nh = h.shape[-1]
    gh = h @ p.W_hh.T + p.b_hh
    r = sigmoid(gi[..., :nh] + gh[..., :nh])
    z = sigmoid(gi[..., nh:2 * nh] + gh[..., nh:2 * nh])
    n = np.tanh(gi[..., 2 * nh:] + r * gh[..., 2 * nh:])
    return r, z, n, gh


def gates(params, gi, h):
    """The gates ``(r, z, n)`` at state ``h`` (B, H) with input projection ``gi`` (B, 3H)."""
    p, gi, h, _, _ = _check_cell(params, gi, h)
    r, z, n, _ = gates_unchecked(p, gi, h)
    return r, z, n


def gru_cell(params, gi, h, *, implicit: bool = False, gamma: float = 1.0):
    """One GRU step from state ``h`` (B, H) with input projection ``gi`` (B, 3H) -> h' (B, H).

    classic: ``h + gamma (1 - z) (n - h)``; implicit: ``(h + gamma (1 - z) n) / (1 + gamma (1 - z))``."""
    p, gi, h, _, gamma = _check_cell(params, gi, h, implicit=implicit, gamma=gamma)
    return cell_unchecked(p, gi, h, implicit=implicit, gamma=gamma)


def cell_unchecked(p: GRUParams, gi, h, *, implicit: bool, gamma: float):
    r, z, n, _ = gates_unchecked(p, gi, h)
    a = gamma * (1.0 - z)
    if implicit:
        return (h + a * n) / (1.0 + a)
    return h + a * (n - h)


def gru_cell_backward(params, gi, h, dh_new, *, implicit: bool = False, gamma: float = 1.0):
    """Vector-Jacobian products of :func:`gru_cell`: given ``dL/dh'`` return
    ``(dh, dgi, dgh)`` -- gradients w.r.t. the old state (B, H), the input projection (B, 3H) and
    ``gh = h W_hh^T + b_hh`` (B, 3H). Works on any leading shape (e.g. (T, B, .) at once)."""
    p, gi, h, dh_new, gamma = _check_cell(params, gi, h, dh_new, implicit=implicit, gamma=gamma)
    return _cell_backward(p, gi, h, dh_new, implicit=implicit, gamma=gamma)


def _cell_backward(p: GRUParams, gi, h, dh_new, *, implicit: bool, gamma: float, need_dh: bool = True):
    r, z, n, gh = gates_unchecked(p, gi, h)
    nh = h.shape[-1]
    a = gamma * (1.0 - z)
    if implicit:
        d = 1.0 + a
        h_new = (h + a * n) / d
        dh_direct = dh_new / d
        dn = dh_new * a / d
        da = dh_new * (n - h_new) / d
    else:
        dh_direct = dh_new * (1.0 - a)
        dn = dh_new * a
        da = dh_new * (n - h)
    dz = -gamma * da
    dpre_z = dz * z * (1.0 - z)
    dpre_n = dn * (1.0 - n * n)
    dpre_r = dpre_n * gh[..., 2 * nh:] * r * (1.0 - r)
    dgi = np.concatenate([dpre_r, dpre_z, dpre_n], axis=-1)
    dgh = np.concatenate([dpre_r, dpre_z, dpre_n * r], axis=-1)
    dh = dh_direct + dgh @ p.W_hh if need_dh else None
    return dh, dgi, dgh


def cell_param_grads(params, X, GI, Hprev, lam, *, implicit: bool = False, gamma: float = 1.0) -> GRUParams:
    """The parameter gradients of a whole sequence, given the adjoint ``lam`` (T, B, H) =
    ``dL/dh_t`` of every step's new state: the per-step terms of :func:`gru_cell_backward` summed over
    time and batch (all steps at once). ``X`` (T, B, nx) the inputs, ``GI`` (T, B, 3H) their
    :func:`input_projection`, ``Hprev`` (T, B, H) the state each step started from.
    Returns a :class:`GRUParams` (the dtypes of ``params``)."""
    p, nx, nh = _check_params(params)
    dims = {"nx": nx}
    X = check_array(X, "X", shape=("T", "B", "nx"), dims=dims)
    GI = check_array(GI, "GI", shape=X.shape[:2] + (3 * nh,))
    Hprev = check_array(Hprev, "Hprev", shape=X.shape[:2] + (nh,))
    lam = check_array(lam, "lam", shape=Hprev.shape)
    implicit = check_bool(implicit, "implicit")
    gamma = check_float(gamma, "gamma", low=0.0)
    return _param_grads(p, X, GI, Hprev, lam, implicit=implicit, gamma=gamma)


def _param_grads(p: GRUParams, X, GI, Hprev, lam, *, implicit: bool, gamma: float) -> GRUParams:
    _, dgi, dgh = _cell_backward(p, GI, Hprev, lam, implicit=implicit, gamma=gamma, need_dh=False)
    return GRUParams(
        W_ih=np.einsum("tbg,tbx->gx", dgi, X).astype(p.W_ih.dtype),
        W_hh=np.einsum("tbg,tbh->gh", dgh, Hprev).astype(p.W_hh.dtype),
        b_ih=dgi.sum(axis=(0, 1)).astype(p.b_ih.dtype),
        b_hh=dgh.sum(axis=(0, 1)).astype(p.b_hh.dtype),
    )


# --------------------------------------------------------------------------- step functions for MGRIT
def gru_steps(params, GI, *, implicit: bool = False, dt: float = 1.0, m: int = 4):
    """``step(h, i, level)`` for MGRIT: level l uses gamma = dt * m**l and input ``GI[i * m**l]``
    (``GI`` (T, B, 3H), the :func:`input_projection`)."""
    p, _, nh = _check_params(params)
    GI = check_array(GI, "GI", shape=("T", "B", 3 * nh))
    implicit = check_bool(implicit, "implicit")
    dt = check_float(dt, "dt", low=0.0, low_inclusive=False)
    m = check_int(m, "m", low=2)

    def step(h, i, level):
        M = m ** level
        return cell_unchecked(p, GI[i * M], h, implicit=implicit, gamma=dt * M)

    return step


def pad_to_hierarchy(T: int, m: int, levels: int) -> int:
    """Smallest length >= T that is a multiple of ``m**(levels-1)`` (GRUs are causal: padding the end
    of a sequence does not change earlier states)."""
    T = check_positive_int(T, "T")
    m = check_int(m, "m", low=2)
    levels = check_int(levels, "levels", low=1, high=64)
    factor = m ** (levels - 1)
    return -(-T // factor) * factor


def coarse_trajectory(params, X, h0=None, *, implicit: bool, dt: float = 1.0, M: int = 16) -> np.ndarray:
    """March the *coarse* step (gamma = dt*M, inputs X[::M]) alone: (T//M + 1, B, H) including h0.
    Shows the explicit coarse step blowing up (values grow like |1 - gamma (1 - z)|**k)."""
    p, X, h0, _, _ = _check_inputs(params, X, h0)
    M = check_positive_int(M, "M")
    implicit = check_bool(implicit, "implicit")
    dt = check_float(dt, "dt", low=0.0, low_inclusive=False)
    GI = _input_projection(p, X[::M])
    out = [h0]
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(GI.shape[0]):
            out.append(cell_unchecked(p, GI[k], out[-1], implicit=implicit, gamma=dt * M))
    return np.stack(out)


def _method_opts(method, mgrit_opts) -> dict:
    check_choice(method, "method", METHODS)
    bad = set(mgrit_opts) - set(MGRIT_OPTIONS)
    if bad:
        raise TypeError(f"mgrit_opts: unknown option(s) {sorted(bad)}; expected some of {list(MGRIT_OPTIONS)}")
    if method == "sequential" and mgrit_opts:
        raise TypeError(f"mgrit_opts: {sorted(mgrit_opts)} are only used with method='mgrit'")
    if method == "mgrit":
        m = check_int(mgrit_opts.get("m", 4), "m")
        if m < 2:
            raise ValueError(f"m: the coarsening factor must be >= 2 (a C-point every m steps), got {m}")
        check_int(mgrit_opts.get("levels", 2), "levels", low=1)
    return mgrit_opts


# --------------------------------------------------------------------------- forward
def gru_forward(params, X, h0=None, *, implicit: bool = False, dt: float = 1.0, method: str = "sequential",
                return_history: bool = False, **mgrit_opts):
    """Run a GRU over ``X`` (T, B, nx) from ``h0`` (B, H) (zeros by default) -> ``H`` (T, B, H)
    (``H[t]`` is the state after input ``X[t]``).

    ``method="sequential"`` marches step by step; ``method="mgrit"`` solves the same recurrence with
    MGRIT (``mgrit_opts``: see the module docstring); T is padded to a multiple of
    ``m**(levels-1)``. With ``return_history=True`` returns ``(H, history)`` (the residual norms,
    empty for ``"sequential"``).
    """
    p, X, h0, _, _ = _check_inputs(params, X, h0)
    dt = check_float(dt, "dt", low=0.0, low_inclusive=False)
    implicit = check_bool(implicit, "implicit")
    return_history = check_bool(return_history, "return_history")
    opts = _method_opts(method, mgrit_opts)
    T = X.shape[0]
    GI = _input_projection(p, X)
    if method == "sequential":
        out = np.empty((T,) + h0.shape, dtype=np.result_type(h0.dtype, GI.dtype))
        h = h0
        for t in range(T):
            h = out[t] = cell_unchecked(p, GI[t], h, implicit=implicit, gamma=dt)
        return (out, []) if return_history else out
    m, levels = opts.get("m", 4), opts.get("levels", 2)
    Tp = pad_to_hierarchy(T, m, levels)
    if Tp > T:
        GI = np.concatenate([GI, np.repeat(GI[-1:], Tp - T, axis=0)])
    solver = MGRIT(gru_steps(p, GI, implicit=implicit, dt=dt, m=m), **opts)
    U, hist = solver.solve(h0.astype(GI.dtype), Tp)
    out = U[1:T + 1]
    return (out, hist) if return_history else out


# --------------------------------------------------------------------------- backward
def _adjoint_steps(p, GI, S, dH, *, implicit, dt, m):
    """Adjoint recurrence in reversed time, v_k = lambda_{T-k} (dL/d state s_{T-k}, s_0 = h0):
    ``v_{k+1} = J_{T-k}^T v_k + src_{T-k-1}``; level l uses the coarse cell's Jacobian (gamma = dt m**l)
    linearised at the injected states, and the source at the coarse point."""
    T = GI.shape[0]

    def src(t):  # direct gradient w.r.t. state s_t (t >= 1): dH[t-1]
        return dH[t - 1] if t >= 1 else 0.0

    def step(v, i, level):
        M = m ** level
        t_new = T - (i + 1) * M  # forward coarse step from s_{t_new} with input GI[t_new]
        dh, _, _ = _cell_backward(p, GI[t_new], S[t_new], v, implicit=implicit, gamma=dt * M)
        return dh + src(t_new)

    return step


def gru_backward(params, X, H, dH, h0=None, *, implicit: bool = False, dt: float = 1.0,
                 method: str = "sequential", return_history: bool = False, **mgrit_opts):
    """Gradients of a loss L w.r.t. the parameters and ``h0``, given the forward states ``H``
    (T, B, H) and ``dH = dL/dH`` (T, B, H) (direct dependence only, e.g. zeros except the last step).

    The adjoint ``lambda_t = dL/ds_t`` obeys the linear backward recurrence
    ``lambda_{t-1} = dH[t-2] + J_t^T lambda_t``: ``method="sequential"`` marches it exactly;
    ``method="mgrit"`` solves it with the same MGRIT run backward in time. The parameter gradients
    are then sums of independent per-step terms (computed for all t at once).
    Returns ``(grads, dh0)`` with ``grads`` a :class:`GRUParams` (or ``(grads, dh0, history)``).
    """
    p, X, h0, _, nh = _check_inputs(params, X, h0)
    T, B = X.shape[:2]
    H = check_array(H, "H", shape=(T, B, nh))
    dH = check_array(dH, "dH", shape=(T, B, nh))
    dt = check_float(dt, "dt", low=0.0, low_inclusive=False)
    implicit = check_bool(implicit, "implicit")
    return_history = check_bool(return_history, "return_history")
    opts = _method_opts(method, mgrit_opts)
    GI = _input_projection(p, X)
    S = np.concatenate([h0[None].astype(H.dtype), H])  # states s_0..s_T
    hist: list = []
    if method == "sequential":
        Lam = np.empty_like(S)  # Lam[t] = lambda_t
        Lam[T] = dH[T - 1]
        for t in range(T, 0, -1):
            dh, _, _ = _cell_backward(p, GI[t - 1], S[t - 1], Lam[t], implicit=implicit, gamma=dt)
            Lam[t - 1] = dh + (dH[t - 2] if t >= 2 else 0.0)
    else:
        m, levels = opts.get("m", 4), opts.get("levels", 2)
        Tp = pad_to_hierarchy(T, m, levels)
        pad = Tp - T
        if pad:  # padded steps come after T: zero adjoint sources there
            GIp = np.concatenate([GI, np.repeat(GI[-1:], pad, axis=0)])
            Sp = np.concatenate([S, np.repeat(S[-1:], pad, axis=0)])
            dHp = np.concatenate([dH, np.zeros((pad,) + dH.shape[1:], dtype=dH.dtype)])
        else:
            GIp, Sp, dHp = GI, S, dH
        step = _adjoint_steps(p, GIp, Sp, dHp, implicit=implicit, dt=dt, m=m)
        V, hist = MGRIT(step, **opts).solve(dHp[Tp - 1].astype(S.dtype), Tp)
        Lam = V[::-1][: T + 1]  # V[k] = lambda_{Tp-k}
    # per-step parameter gradients, all time steps at once
    grads = _param_grads(p, X, GI, S[:-1], Lam[1:], implicit=implicit, gamma=dt)
    return (grads, Lam[0], hist) if return_history else (grads, Lam[0])


# --------------------------------------------------------------------------- classifier
@dataclass
class GRUClassifierParams(Params):
    """GRU -> last hidden state -> linear -> softmax: ``gru`` (:class:`GRUParams`), ``W_out (C, H)``,
    ``b_out (C,)``. Gradients come back in the same class."""

    gru: GRUParams
    W_out: np.ndarray
    b_out: np.ndarray

    def __post_init__(self):
        if not isinstance(self.gru, GRUParams):
            raise TypeError(f"gru: expected GRUParams, got {type(self.gru).__name__}")
        dims = {"H": self.gru.nh}
        self.W_out = check_array(self.W_out, "W_out", shape=("C", "H"), dims=dims, finite=False)
        self.b_out = check_array(self.b_out, "b_out", shape=("C",), dims=dims, finite=False)

    @property
    def nx(self) -> int:
        return self.gru.nx

    @property
    def nh(self) -> int:
        return self.gru.nh

    @property
    def n_classes(self) -> int:
        return self.W_out.shape[0]


def init_classifier(nx: int, nh: int, n_classes: int, *, seed: int = 0, dtype=np.float32) -> GRUClassifierParams:
    """GRU parameters (:func:`init_params`) plus ``W_out`` (C, H) uniform in (-1/sqrt(H), 1/sqrt(H)), ``b_out = 0``."""
    n_classes = check_int(n_classes, "n_classes", low=2)
    g = init_params(nx, nh, seed=seed, dtype=dtype)
    check_alloc((n_classes + 1, nh), dtype, largest(n_classes=n_classes, nh=nh), what="the classifier head")
    rng = np.random.default_rng(seed + 1)
    k = 1.0 / np.sqrt(nh)
    return GRUClassifierParams(g, rng.uniform(-k, k, size=(n_classes, nh)).astype(dtype),
                               np.zeros(n_classes, dtype=dtype))


def _check_classifier(params) -> GRUClassifierParams:
    if not isinstance(params, GRUClassifierParams):
        raise TypeError(f"params: expected GRUClassifierParams (see gru.init_classifier), got {type(params).__name__}")
    _check_params(params.gru)
    dims = {"H": params.gru.nh}
    check_array(params.W_out, "params.W_out", shape=("C", "H"), dims=dims)
    check_array(params.b_out, "params.b_out", shape=("C",), dims=dims)
    return params


def _logits(params: GRUClassifierParams, X, *, implicit, dt, method, mgrit_opts):
    H = gru_forward(params.gru, X, implicit=implicit, dt=dt, method=method, **mgrit_opts)
    return H, H[-1] @ params.W_out.T + params.b_out


def classifier_predict(params, X, *, implicit: bool = False, dt: float = 1.0, method: str = "sequential",
                       **mgrit_opts) -> np.ndarray:
    """Class index per sequence of ``X`` (T, B, nx) -> (B,)."""
    params = _check_classifier(params)
    _, logits = _logits(params, X, implicit=implicit, dt=dt, method=method, mgrit_opts=mgrit_opts)
    return np.argmax(logits, axis=-1)


def classifier_loss(params, X, y, *, implicit: bool = False, dt: float = 1.0, method: str = "sequential",
                    grad: bool = True, **mgrit_opts):
    """Mean softmax cross-entropy of GRU -> last hidden state -> linear -> softmax on ``X`` (T, B, nx),
    ``y`` (B,). Returns ``(loss, grads)`` (a :class:`GRUClassifierParams`) or just ``loss`` when
    ``grad=False``. With ``method="mgrit"`` forward and backward both go through MGRIT."""
    params = _check_classifier(params)
    X = check_array(X, "X", shape=("T", "B", params.nx), min_size={"T": 1, "B": 1})
    y = check_ids(y, "y", params.n_classes, shape=(X.shape[1],), what="labels")
    H, logits = _logits(params, X, implicit=implicit, dt=dt, method=method, mgrit_opts=mgrit_opts)
    z = logits - logits.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    B = y.shape[0]
    loss = float(-logp[np.arange(B), y].mean())
    if not grad:
        return loss
    dlogits = np.exp(logp)
    dlogits[np.arange(B), y] -= 1.0
    dlogits /= B
    dlogits = dlogits.astype(H.dtype)
    dH = np.zeros_like(H)
    dH[-1] = dlogits @ params.W_out
    g, _ = gru_backward(params.gru, X, H, dH, implicit=implicit, dt=dt, method=method, **mgrit_opts)
    return loss, GRUClassifierParams(g, (dlogits.T @ H[-1]).astype(params.W_out.dtype),
                                     dlogits.sum(axis=0).astype(params.b_out.dtype))


def train_classifier(params, X, y, *, epochs: int = 3, batch: int = 32, lr: float = 1e-2, clip: float | None = None,
                     seed: int = 0, implicit: bool = False, dt: float = 1.0, method: str = "sequential", progress=None,
                     **mgrit_opts) -> TrainResult:
    """Adam on mini-batches (shuffled with ``seed``) of ``X`` (T, N, nx), ``y`` (N,); ``clip`` caps the
    global gradient norm (None: no clipping).

    ``progress`` is an optional callable ``progress(iterable) -> iterable`` (e.g. ``tqdm``).
    Returns a :class:`~course_lib.core.results.TrainResult`: ``params`` (a trained copy),
    ``history = {"loss": [per batch], "epoch": [per batch]}``, ``seconds``, ``info`` with the
    method, ``implicit`` and the MGRIT options."""
    params = _check_classifier(params)
    epochs = check_count(epochs, "epochs")
    batch = check_positive_int(batch, "batch")
    lr = check_float(lr, "lr", low=0.0, low_inclusive=False)
    _method_opts(method, mgrit_opts)
    N = X.shape[1]
    rng = np.random.default_rng(seed)
    p = params.copy()
    opt = Adam(p.arrays(), lr, clip=clip)
    history: dict = {"loss": [], "epoch": []}
    batches = [(e, s) for e in range(epochs) for s in range(0, N, batch)]
    order = {e: rng.permutation(N) for e in range(epochs)}
    it = progress(batches) if progress is not None else batches
    t0 = time.perf_counter()
    for e, s in it:
        idx = order[e][s:s + batch]
        loss, g = classifier_loss(p, X[:, idx], y[idx], implicit=implicit, dt=dt, method=method, **mgrit_opts)
        opt.step(g.arrays())
        history["loss"].append(loss)
        history["epoch"].append(e)
    seconds = time.perf_counter() - t0
    return TrainResult(p, history, seconds, {"method": method, "implicit": implicit, "dt": dt, "clip": clip,
                                             "mgrit_opts": dict(mgrit_opts)})
