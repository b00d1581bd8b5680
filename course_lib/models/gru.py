"""GRUs as time stepping: classic and implicit cells, serial and MGRIT solvers (layer 2: methods).

PyTorch's layout and gate order (r, z, n)::

    gi = x W_ih^T + b_ih      gh = h W_hh^T + b_hh          (each (B, 3H), split r | z | n)
    r = sigma(gi_r + gh_r)    z = sigma(gi_z + gh_z)       n = tanh(gi_n + r * gh_n)
    classic  (explicit Euler, gamma = 1):  h' = h + gamma (1 - z) (n - h)  = z h + (1 - z) n
    implicit (Moon & Cyr 2022):            h' = (h + gamma (1 - z) n) / (1 + gamma (1 - z))

with the gates evaluated at the old state ``h``. ``dh/dt = -(1 - z) h + (1 - z) n`` is stiff: the
explicit step amplifies errors by ``|1 - gamma (1 - z)|``, which exceeds 1 once ``gamma (1 - z) > 2``
-- on MGRIT's coarse grids, where ``gamma = dt * m**level``. The implicit step is stable for any gamma.

On level l the coarse step from coarse point i uses gamma = dt * m**l and the input at the coarse
time point, ``x[i * m**l]`` (injection).

Public API
----------
``init_params(nx, nh, *, seed=0, dtype=np.float32)`` -> dict W_ih (3H, nx), W_hh (3H, H), b_ih, b_hh (3H,)
``gru_cell(params, gi, h, *, implicit=False, gamma=1.0)`` -> h' (B, H) (``gi`` = input projection)
``gru_forward(params, X, h0=None, *, implicit=False, dt=1.0, solver="serial", **mgrit_opts)`` -> H (T, B, H)
``gru_backward(params, X, H, dH, h0=None, *, implicit=False, dt=1.0, solver="serial", **mgrit_opts)``
    -> (grads dict, dh0): exact adjoint (serial) or the adjoint recurrence solved with MGRIT
``init_classifier``, ``classifier_loss``, ``classifier_predict``, ``train_classifier`` -- GRU -> last h -> linear -> softmax
"""
from __future__ import annotations

import numpy as np

from ..algorithms.mgrit import MGRIT
from ..core.optim import Adam
from ..core.validate import check_array, check_choice, check_float, check_int, check_positive_int

__all__ = [
    "PARAM_NAMES",
    "init_params",
    "input_projection",
    "gru_cell",
    "gru_cell_backward",
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

PARAM_NAMES = ("W_ih", "W_hh", "b_ih", "b_hh")
SOLVERS = ("serial", "mgrit")


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # stable for large |x|


# --------------------------------------------------------------------------- parameters
def init_params(nx: int, nh: int, *, seed: int = 0, dtype=np.float32) -> dict:
    """PyTorch's GRU init: every entry uniform in (-1/sqrt(H), 1/sqrt(H)).
    Returns ``{"W_ih": (3H, nx), "W_hh": (3H, H), "b_ih": (3H,), "b_hh": (3H,)}``."""
    nx = check_positive_int(nx, "nx")
    nh = check_positive_int(nh, "nh")
    if np.dtype(dtype) not in (np.float32, np.float64):
        raise TypeError(f"dtype: expected float32 or float64, got {np.dtype(dtype)}")
    rng = np.random.default_rng(seed)
    k = 1.0 / np.sqrt(nh)
    shapes = {"W_ih": (3 * nh, nx), "W_hh": (3 * nh, nh), "b_ih": (3 * nh,), "b_hh": (3 * nh,)}
    return {name: rng.uniform(-k, k, size=s).astype(dtype) for name, s in shapes.items()}


def _check_params(params) -> tuple[int, int]:
    if not isinstance(params, dict):
        raise TypeError(f"params: expected a dict with {', '.join(PARAM_NAMES)}, got {type(params).__name__}")
    missing = [k for k in PARAM_NAMES if k not in params]
    if missing:
        raise ValueError(f"params: missing {', '.join(missing)} (expected {', '.join(PARAM_NAMES)})")
    dims: dict = {}
    check_array(params["W_ih"], "params['W_ih']", shape=("3H", "nx"), dims=dims)
    check_array(params["W_hh"], "params['W_hh']", shape=("3H", None), dims=dims)
    nh3 = dims["3H"]
    if nh3 % 3:
        raise ValueError(f"params['W_ih']: expected 3H rows (gates r, z, n), got {nh3}")
    nh = nh3 // 3
    check_array(params["W_hh"], "params['W_hh']", shape=(3 * nh, nh))
    check_array(params["b_ih"], "params['b_ih']", shape=(3 * nh,))
    check_array(params["b_hh"], "params['b_hh']", shape=(3 * nh,))
    return dims["nx"], nh


def _check_inputs(params, X, h0):
    nx, nh = _check_params(params)
    dims = {"nx": nx}
    X = check_array(X, "X", shape=("T", "B", "nx"), dims=dims, min_size={"T": 1})
    B = dims["B"]
    dtype = params["W_hh"].dtype
    if h0 is None:
        h0 = np.zeros((B, nh), dtype=dtype)
    else:
        h0 = check_array(h0, "h0", shape=(B, nh))
    return X, h0, nx, nh


def input_projection(params, X) -> np.ndarray:
    """``gi = X W_ih^T + b_ih`` for all time steps at once: (T, B, nx) -> (T, B, 3H) (one big GEMM)."""
    return X @ params["W_ih"].T + params["b_ih"]


# --------------------------------------------------------------------------- the cell
def _gates(params, gi, h):
    nh = h.shape[-1]
    gh = h @ params["W_hh"].T + params["b_hh"]
    r = _sigmoid(gi[..., :nh] + gh[..., :nh])
    z = _sigmoid(gi[..., nh:2 * nh] + gh[..., nh:2 * nh])
    n = np.tanh(gi[..., 2 * nh:] + r * gh[..., 2 * nh:])
    return r, z, n, gh


def gru_cell(params, gi, h, *, implicit: bool = False, gamma: float = 1.0):
    """One GRU step from state ``h`` (B, H) with input projection ``gi`` (B, 3H) -> h' (B, H).

    classic: ``h + gamma (1 - z) (n - h)``; implicit: ``(h + gamma (1 - z) n) / (1 + gamma (1 - z))``."""
    r, z, n, _ = _gates(params, gi, h)
    a = gamma * (1.0 - z)
    if implicit:
        return (h + a * n) / (1.0 + a)
    return h + a * (n - h)


def gru_cell_backward(params, gi, h, dh_new, *, implicit: bool = False, gamma: float = 1.0):
    """Vector-Jacobian products of :func:`gru_cell`: given ``dL/dh'`` return
    ``(dh, dgi, dgh)`` -- gradients w.r.t. the old state (B, H), the input projection (B, 3H) and
    ``gh = h W_hh^T + b_hh`` (B, 3H). Works on any leading shape (e.g. (T, B, .) at once)."""
    r, z, n, gh = _gates(params, gi, h)
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
    dh = dh_direct + dgh @ params["W_hh"]
    return dh, dgi, dgh


# --------------------------------------------------------------------------- step functions for MGRIT
def gru_steps(params, GI, *, implicit: bool = False, dt: float = 1.0, m: int = 4):
    """``step(h, i, level)`` for MGRIT: level l uses gamma = dt * m**l and input ``GI[i * m**l]``."""
    def step(h, i, level):
        M = m ** level
        return gru_cell(params, GI[i * M], h, implicit=implicit, gamma=dt * M)

    return step


def pad_to_hierarchy(T: int, m: int, levels: int) -> int:
    """Smallest length >= T that is a multiple of ``m**(levels-1)`` (GRUs are causal: padding the end
    of a sequence does not change earlier states)."""
    factor = m ** (levels - 1)
    return -(-T // factor) * factor


def coarse_trajectory(params, X, h0=None, *, implicit: bool, dt: float = 1.0, M: int = 16) -> np.ndarray:
    """March the *coarse* step (gamma = dt*M, inputs X[::M]) alone: (T//M + 1, B, H) including h0.
    Shows the explicit coarse step blowing up (values grow like |1 - gamma (1 - z)|**k)."""
    X, h0, _, _ = _check_inputs(params, X, h0)
    M = check_positive_int(M, "M")
    GI = input_projection(params, X[::M])
    out = [h0]
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(GI.shape[0]):
            out.append(gru_cell(params, GI[k], out[-1], implicit=implicit, gamma=dt * M))
    return np.stack(out)


def _mgrit_solver(step, mgrit_opts):
    allowed = {"m", "levels", "relax", "max_iter", "tol", "cycle", "workers", "diverge_factor"}
    bad = set(mgrit_opts) - allowed
    if bad:
        raise TypeError(f"mgrit_opts: unknown option(s) {sorted(bad)}; expected some of {sorted(allowed)}")
    return MGRIT(step, **mgrit_opts)


# --------------------------------------------------------------------------- forward
def gru_forward(params, X, h0=None, *, implicit: bool = False, dt: float = 1.0, solver: str = "serial",
                return_history: bool = False, **mgrit_opts):
    """Run a GRU over ``X`` (T, B, nx) from ``h0`` (B, H) (zeros by default) -> ``H`` (T, B, H)
    (``H[t]`` is the state after input ``X[t]``).

    ``solver="serial"`` marches step by step; ``solver="mgrit"`` solves the same recurrence with
    :class:`course_lib.algorithms.mgrit.MGRIT` (options ``m``, ``levels``, ``relax``, ``max_iter``, ``tol``,
    ``cycle``, ``workers``); T is padded to a multiple of ``m**(levels-1)``. With
    ``return_history=True`` returns ``(H, history)``.
    """
    X, h0, _, _ = _check_inputs(params, X, h0)
    dt = check_float(dt, "dt", low=0.0, low_inclusive=False)
    check_choice(solver, "solver", SOLVERS)
    T = X.shape[0]
    GI = input_projection(params, X)
    if solver == "serial":
        if mgrit_opts:
            raise TypeError(f"mgrit_opts: {sorted(mgrit_opts)} are only used with solver='mgrit'")
        out = np.empty((T,) + h0.shape, dtype=np.result_type(h0.dtype, GI.dtype))
        h = h0
        for t in range(T):
            h = out[t] = gru_cell(params, GI[t], h, implicit=implicit, gamma=dt)
        return (out, []) if return_history else out
    m = check_int(mgrit_opts.get("m", 4), "m")
    levels = check_int(mgrit_opts.get("levels", 2), "levels", low=1)
    if m < 2:
        raise ValueError(f"m: the coarsening factor must be >= 2 (a C-point every m steps), got {m}")
    Tp = pad_to_hierarchy(T, m, levels)
    if Tp > T:
        GI = np.concatenate([GI, np.repeat(GI[-1:], Tp - T, axis=0)])
    solver_ = _mgrit_solver(gru_steps(params, GI, implicit=implicit, dt=dt, m=m), mgrit_opts)
    U, hist = solver_.solve(h0.astype(GI.dtype), Tp)
    out = U[1:T + 1]
    return (out, hist) if return_history else out


# --------------------------------------------------------------------------- backward
def _adjoint_steps(params, GI, S, dH, *, implicit, dt, m):
    """Adjoint recurrence in reversed time, v_k = lambda_{T-k} (dL/d state s_{T-k}, s_0 = h0):
    ``v_{k+1} = J_{T-k}^T v_k + src_{T-k-1}``; level l uses the coarse cell's Jacobian (gamma = dt m**l)
    linearised at the injected states, and the source at the coarse point."""
    T = GI.shape[0]

    def src(t):  # direct gradient w.r.t. state s_t (t >= 1): dH[t-1]
        return dH[t - 1] if t >= 1 else 0.0

    def step(v, i, level):
        M = m ** level
        t_new = T - (i + 1) * M  # forward coarse step from s_{t_new} with input GI[t_new]
        dh, _, _ = gru_cell_backward(params, GI[t_new], S[t_new], v, implicit=implicit, gamma=dt * M)
        return dh + src(t_new)

    return step


def gru_backward(params, X, H, dH, h0=None, *, implicit: bool = False, dt: float = 1.0,
                 solver: str = "serial", return_history: bool = False, **mgrit_opts):
    """Gradients of a loss L w.r.t. the parameters and ``h0``, given the forward states ``H``
    (T, B, H) and ``dH = dL/dH`` (T, B, H) (direct dependence only, e.g. zeros except the last step).

    The adjoint ``lambda_t = dL/ds_t`` obeys the linear backward recurrence
    ``lambda_{t-1} = dH[t-2] + J_t^T lambda_t``: ``solver="serial"`` marches it exactly;
    ``solver="mgrit"`` solves it with the same MGRIT run backward in time. The parameter gradients
    are then sums of independent per-step terms (computed for all t at once).
    Returns ``(grads, dh0)`` with ``grads`` keyed like ``params`` (or ``(grads, dh0, history)``).
    """
    X, h0, _, nh = _check_inputs(params, X, h0)
    T, B = X.shape[:2]
    H = check_array(H, "H", shape=(T, B, nh))
    dH = check_array(dH, "dH", shape=(T, B, nh))
    dt = check_float(dt, "dt", low=0.0, low_inclusive=False)
    check_choice(solver, "solver", SOLVERS)
    GI = input_projection(params, X)
    S = np.concatenate([h0[None].astype(H.dtype), H])  # states s_0..s_T
    hist: list = []
    if solver == "serial":
        if mgrit_opts:
            raise TypeError(f"mgrit_opts: {sorted(mgrit_opts)} are only used with solver='mgrit'")
        Lam = np.empty_like(S)  # Lam[t] = lambda_t
        Lam[T] = dH[T - 1]
        for t in range(T, 0, -1):
            dh, _, _ = gru_cell_backward(params, GI[t - 1], S[t - 1], Lam[t], implicit=implicit, gamma=dt)
            Lam[t - 1] = dh + (dH[t - 2] if t >= 2 else 0.0)
    else:
        m = check_int(mgrit_opts.get("m", 4), "m")
        levels = check_int(mgrit_opts.get("levels", 2), "levels", low=1)
        if m < 2:
            raise ValueError(f"m: the coarsening factor must be >= 2 (a C-point every m steps), got {m}")
        Tp = pad_to_hierarchy(T, m, levels)
        pad = Tp - T
        if pad:  # padded steps come after T: zero adjoint sources there
            GIp = np.concatenate([GI, np.repeat(GI[-1:], pad, axis=0)])
            Sp = np.concatenate([S, np.repeat(S[-1:], pad, axis=0)])
            dHp = np.concatenate([dH, np.zeros((pad,) + dH.shape[1:], dtype=dH.dtype)])
        else:
            GIp, Sp, dHp = GI, S, dH
        step = _adjoint_steps(params, GIp, Sp, dHp, implicit=implicit, dt=dt, m=m)
        V, hist = _mgrit_solver(step, mgrit_opts).solve(dHp[Tp - 1].astype(S.dtype), Tp)
        Lam = V[::-1][: T + 1]  # V[k] = lambda_{Tp-k}
    # per-step parameter gradients, all time steps at once
    _, dgi, dgh = gru_cell_backward(params, GI, S[:-1], Lam[1:], implicit=implicit, gamma=dt)
    grads = {
        "W_ih": np.einsum("tbg,tbx->gx", dgi, X).astype(params["W_ih"].dtype),
        "b_ih": dgi.sum(axis=(0, 1)).astype(params["b_ih"].dtype),
        "W_hh": np.einsum("tbg,tbh->gh", dgh, S[:-1]).astype(params["W_hh"].dtype),
        "b_hh": dgh.sum(axis=(0, 1)).astype(params["b_hh"].dtype),
    }
    return (grads, Lam[0], hist) if return_history else (grads, Lam[0])


# --------------------------------------------------------------------------- classifier
def init_classifier(nx: int, nh: int, n_classes: int, *, seed: int = 0, dtype=np.float32) -> dict:
    """GRU parameters plus ``W_out`` (C, H), ``b_out`` (C,)."""
    n_classes = check_int(n_classes, "n_classes", low=2)
    p = init_params(nx, nh, seed=seed, dtype=dtype)
    rng = np.random.default_rng(seed + 1)
    k = 1.0 / np.sqrt(nh)
    p["W_out"] = rng.uniform(-k, k, size=(n_classes, nh)).astype(dtype)
    p["b_out"] = np.zeros(n_classes, dtype=dtype)
    return p


def _logits(params, X, *, implicit, dt, solver, mgrit_opts):
    H = gru_forward(params, X, implicit=implicit, dt=dt, solver=solver, **mgrit_opts)
    return H, H[-1] @ params["W_out"].T + params["b_out"]


def classifier_predict(params, X, *, implicit: bool = False, dt: float = 1.0, solver: str = "serial",
                       **mgrit_opts) -> np.ndarray:
    """Class index per sequence, (B,)."""
    _, logits = _logits(params, X, implicit=implicit, dt=dt, solver=solver, mgrit_opts=mgrit_opts)
    return np.argmax(logits, axis=-1)


def classifier_loss(params, X, y, *, implicit: bool = False, dt: float = 1.0, solver: str = "serial",
                    grad: bool = True, **mgrit_opts):
    """Mean softmax cross-entropy of GRU -> last hidden state -> linear -> softmax.
    Returns ``(loss, grads)`` (grads for every key of ``params``) or just ``loss`` when ``grad=False``."""
    H, logits = _logits(params, X, implicit=implicit, dt=dt, solver=solver, mgrit_opts=mgrit_opts)
    y = check_array(y, "y", shape=(X.shape[1],), dtype="int")
    n_classes = params["W_out"].shape[0]
    if y.size and (y.min() < 0 or y.max() >= n_classes):
        raise ValueError(f"y: labels must be in [0, {n_classes}), got range [{y.min()}, {y.max()}]")
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
    dH[-1] = dlogits @ params["W_out"]
    grads, _ = gru_backward(params, X, H, dH, implicit=implicit, dt=dt, solver=solver, **mgrit_opts)
    grads["W_out"] = (dlogits.T @ H[-1]).astype(params["W_out"].dtype)
    grads["b_out"] = dlogits.sum(axis=0).astype(params["b_out"].dtype)
    return loss, grads


def train_classifier(params, X, y, *, epochs: int = 3, batch: int = 32, lr: float = 1e-2, seed: int = 0,
                     implicit: bool = False, dt: float = 1.0, solver: str = "serial", progress=None,
                     **mgrit_opts) -> tuple[dict, list[float]]:
    """Adam on mini-batches (shuffled with ``seed``). ``X`` (T, N, nx), ``y`` (N,).
    ``progress`` is an optional callable ``progress(iterable) -> iterable`` (e.g. ``tqdm``).
    Returns ``(trained params (a copy), per-batch losses)``."""
    epochs = check_positive_int(epochs, "epochs")
    batch = check_positive_int(batch, "batch")
    lr = check_float(lr, "lr", low=0.0, low_inclusive=False)
    N = X.shape[1]
    rng = np.random.default_rng(seed)
    p = {k: v.copy() for k, v in params.items()}
    names = list(p)
    opt = Adam([p[k] for k in names], lr)
    losses = []
    batches = [(e, s) for e in range(epochs) for s in range(0, N, batch)]
    order = {e: rng.permutation(N) for e in range(epochs)}
    it = progress(batches) if progress is not None else batches
    for e, s in it:
        idx = order[e][s:s + batch]
        loss, g = classifier_loss(p, X[:, idx], y[idx], implicit=implicit, dt=dt, solver=solver, **mgrit_opts)
        opt.step([g[k] for k in names])
        losses.append(loss)
    return p, losses
