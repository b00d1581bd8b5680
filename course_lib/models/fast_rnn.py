"""The fastest CPU training step for the seed's RNN (models layer; chapter 05).

Same maths as :mod:`course_lib.models.rnn` (row vectors, time-major ``(T, B, features)``)::

    h_t  = tanh(x_t Wxh + h_{t-1} Whh)        ŷ_t = tanh(h_t Why)        E = Σ (ŷ_t − y_t)²

but organised the way the hardware likes it. Six ideas, each worth a chapter section:

1. **One GEMM for the input projection of all time steps.** ``x_t Wxh`` does not depend on
   ``h_{t-1}``, so ``X.reshape(T*B, nx) @ Wxh`` computes it for every ``t`` at once, into the
   buffer that will hold ``H``. Likewise ``H @ Why`` (all outputs), ``Δŷ @ Whyᵀ`` (the output's
   share of every hidden gradient) and the three weight gradients ``Hᵀ Δŷ``, ``H_{t-1}ᵀ Δz``,
   ``Xᵀ Δz`` are *one* big GEMM each. Only ``h_{t-1} Whh`` (forward) and ``Δz_{t+1} Whhᵀ``
   (backward) stay inside the time loop: that is the recurrence.
2. **Preallocated workspaces** (:class:`Workspace`): every intermediate has a home allocated
   once and reused across steps; GEMMs write into it with ``np.matmul(..., out=...)``. Nothing
   is "saved": ``H`` is computed in place where the backward pass will read it.
3. **Fused element-wise kernels** (numba; one body per kernel, compiled serial and ``prange``):
   ``tanh(z + h Whh)`` in one pass; ``ŷ = tanh(·)``, the loss and the output delta
   ``2(ŷ−y)(1−ŷ²)`` in one pass; ``(Δh + Δz Whhᵀ)(1−h²)`` in one pass; ``W − lr·g`` in one pass.
   float32 uses the course's vectorisable rational ``tanh``
   (:func:`course_lib.algorithms.activations.fast_tanh`; libm's scalar ``tanhf`` does not
   vectorise), and every kernel is compiled with ``error_model="numpy"``: numba's default Python
   error model checks each division for zero (to raise ZeroDivisionError), and that branch stops
   LLVM from vectorising the loop (chapter 05 measures the difference).
4. **BLAS with the layout that suits it**: transposes are views (``Whh.T``, ``H.T``), which
   BLAS reads with its transpose flag -- no copies.
5. **Threads** for BLAS (and, optionally, numba), set together with
   :func:`course_lib.core.backend.set_threads`. By default the fused passes stay on the calling
   thread (``method="loop"``, see :func:`make_workspace`): the GEMMs carry almost all the FLOPs
   and get every thread.
6. **Data parallelism inside the step** (:class:`SplitWorkspace`): the rows of a batch are
   independent until the weight gradients, which are *sums* over the rows. So the batch is split
   into one row group per thread, and each thread runs the whole step on its rows -- forward
   sweep, backward sweep, gradients -- with one-thread BLAS; the threads meet once, to add their
   gradients. One multi-threaded GEMM per time step instead makes the threads meet at every GEMM,
   and a GEMM of B rows split over the threads runs further from the BLAS's peak than a whole
   GEMM of B/threads rows on each thread. It is opt-in (``make_workspace(..., groups=None)``:
   :func:`auto_groups` splits when every group keeps at least ``MIN_GROUP_ROWS`` rows, below which
   a one-thread GEMM spends too much of its time packing the weights): at the seed's size on a quiet
   2-core Zen 5 the split ran at 0.95x the one-group step (whose threaded GEMMs were near the peak),
   while with other programs on the cores it ran 1.2-1.3x faster. ``benchmarks/rnn_step.py`` times
   both here; the default (``groups=1``) is the one-group step of ideas 1-5.

Public API
----------
``make_workspace(T, batch, nx, nh, ny, dtype=np.float32, *, method="loop", groups=1)`` -> Workspace or SplitWorkspace
``auto_groups(batch, method="loop", threads=None)`` -- the row groups ``groups=None`` picks (``MIN_GROUP_ROWS``)
(these two, with the workspace classes, live in :mod:`.fast_rnn_workspace`)
``train_step(params, X, Y, lr, *, workspace=None, h0=None, inplace=False, threads=None) -> (params, loss)``
``gradients(params, X, Y, *, workspace=None, h0=None) -> (RNNParams of gradients, loss)``
``step_flops(T, batch, nx, nh, ny, h0=False)`` -- GEMM FLOPs of one step (what GFLOP/s counts)
``NumpyStep(T, B, nx, nh, ny)`` -- the same step with one numpy pass per element-wise operation (:mod:`.numpy_step`)
``fused_kernels(method)`` -- the six fused element-wise kernels, ``"loop"`` or ``"prange"``
``prepare(params, X, Y, h0=None, workspace=None, *, groups=1)`` -- validated, contiguous inputs and a workspace

The phase functions (``forward_into``, ``output_pre_activation_into``, ``output_delta_into``, ``backward_into``,
``weight_gradients_into``, ``descend``) are public so :mod:`course_lib.experiments.profile` can time them; they
take a one-group :class:`Workspace` (``descend`` takes either kind).
"""
from __future__ import annotations

import functools
import math
import os
import types as _pytypes
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numba
from numba import njit, prange

from ..algorithms.activations import fast_tanh
from ..core import backend
from ..core.validate import check_array, check_bool, check_choice, check_float, check_int, check_positive_int
from .fast_rnn_workspace import (ELEMENTWISE_METHODS, MIN_GROUP_ROWS, SplitWorkspace, Workspace, auto_groups,
                                 make_workspace)
from .numpy_step import NumpyStep
from .rnn import RNNParams
from .step_checks import check_grads, check_loss

__all__ = [
    "Workspace",
    "SplitWorkspace",
    "make_workspace",
    "auto_groups",
    "MIN_GROUP_ROWS",
    "train_step",
    "gradients",
    "step_flops",
    "forward_into",
    "output_pre_activation_into",
    "output_delta_into",
    "backward_into",
    "weight_gradients_into",
    "descend",
    "prepare",
    "fused_kernels",
    "FusedKernels",
    "ELEMENTWISE_METHODS",
    "NumpyStep",
]


# --------------------------------------------------------------------------- fused kernels
# Each operation is written once, for one row (inline, vectorised by LLVM: a loop over a contiguous
# row view), and driven over the rows by ONE body whose loop is a ``prange``. That body is compiled
# twice (:func:`_twins`, as minitorch does): without ``parallel=True`` numba runs ``prange`` like
# ``range`` on the calling thread ("loop"), with it the rows are split across numba's threads
# ("prange"). ``Workspace.method`` picks the twin.
_OPTS = dict(fastmath=True, error_model="numpy", cache=True, nogil=True)  # nogil: row groups run them at once


@njit(inline="always", **_OPTS)
def _tanh_row(z):
    for j in range(z.shape[0]):
        z[j] = fast_tanh(z[j])


@njit(inline="always", **_OPTS)
def _add_tanh_row(z, r):
    for j in range(z.shape[0]):
        z[j] = fast_tanh(z[j] + r[j])


@njit(inline="always", **_OPTS)
def _output_delta_loss_row(z, y):
    part = z.dtype.type(0)  # in the row's dtype (a float64 accumulator would block SIMD for float32)
    for j in range(z.shape[0]):
        yh = fast_tanh(z[j])
        e = yh - y[j]
        part += e * e
        z[j] = (e + e) * (np.float32(1) - yh * yh)
    return part


@njit(inline="always", **_OPTS)
def _tanh_backward_row(dz, h):
    for j in range(dz.shape[0]):
        dz[j] = dz[j] * (np.float32(1) - h[j] * h[j])


@njit(inline="always", **_OPTS)
def _add_tanh_backward_row(dz, r, h):
    for j in range(dz.shape[0]):
        dz[j] = (dz[j] + r[j]) * (np.float32(1) - h[j] * h[j])


@njit(inline="always", **_OPTS)
def _axpy_row(out, w, g, lr):
    for j in range(w.shape[0]):
        out[j] = w[j] - lr * g[j]


# the drivers: one body each ------------------------------------------------
def _tanh_inplace(z):
    """z (B, n) <- tanh(z)."""
    for i in prange(z.shape[0]):
        _tanh_row(z[i])


def _add_tanh(z, r):
    """z (B, n) <- tanh(z + r): the input projection plus the recurrent product, activated."""
    for i in prange(z.shape[0]):
        _add_tanh_row(z[i], r[i])


def _output_delta_loss(z, y):
    """z (N, ny) pre-activations in, output delta out: ŷ = tanh(z); z <- 2(ŷ−y)(1−ŷ²).
    Returns Σ(ŷ−y)² (row sums in the data's dtype, added up in float64). Three passes of the
    naive code in one."""
    total = 0.0
    for i in prange(z.shape[0]):
        total += _output_delta_loss_row(z[i], y[i])
    return total


def _tanh_backward_inplace(dz, h):
    """dz (B, n) <- dz * (1 − h²)."""
    for i in prange(dz.shape[0]):
        _tanh_backward_row(dz[i], h[i])


def _add_tanh_backward(dz, r, h):
    """dz (B, n) <- (dz + r) * (1 − h²): the output's and the future's gradient, through tanh."""
    for i in prange(dz.shape[0]):
        _add_tanh_backward_row(dz[i], r[i], h[i])


def _axpy_into(out, w, g, lr):
    """out (m, n) <- w − lr * g (out may be w itself)."""
    for i in prange(w.shape[0]):
        _axpy_row(out[i], w[i], g[i], lr)


def _twins(body):
    """(serial, prange) dispatchers compiled from one Python body.

    The prange twin is a copy of the function under another ``__qualname__``, so numba's on-disk
    cache keeps the two compilations in separate files (its index does not key on ``parallel``).
    """
    par = _pytypes.FunctionType(body.__code__, body.__globals__, body.__name__ + "_prange",
                                body.__defaults__, body.__closure__)
    par.__qualname__ = body.__qualname__ + "_prange"
    par.__module__ = body.__module__
    par.__doc__ = body.__doc__
    return njit(**_OPTS)(body), njit(parallel=True, **_OPTS)(par)


_BODIES = (_tanh_inplace, _add_tanh, _output_delta_loss, _tanh_backward_inplace, _add_tanh_backward, _axpy_into)


class FusedKernels:
    """The six fused element-wise kernels of one method (attributes named after the bodies above):
    ``tanh_inplace(z)``, ``add_tanh(z, r)``, ``output_delta_loss(z, y) -> loss``,
    ``tanh_backward_inplace(dz, h)``, ``add_tanh_backward(dz, r, h)``, ``axpy_into(out, w, g, lr)``.
    All take C-contiguous 2-D arrays of one float dtype and work in place."""

    def __init__(self, method: str, kernels: dict):
        self.method = check_choice(method, "method", ELEMENTWISE_METHODS)
        if not isinstance(kernels, dict) or not all(isinstance(k, str) and callable(v) for k, v in kernels.items()):
            raise TypeError(f"kernels: expected a dict of name -> compiled kernel, got {type(kernels).__name__}")
        for name, k in kernels.items():
            setattr(self, name, k)

    def __repr__(self) -> str:
        return f"FusedKernels(method={self.method!r})"


def _build_kernels() -> dict:
    pairs = {body.__name__.lstrip("_"): _twins(body) for body in _BODIES}
    return {m: FusedKernels(m, {name: pair[i] for name, pair in pairs.items()})
            for i, m in enumerate(ELEMENTWISE_METHODS)}


_KERNELS = _build_kernels()


def fused_kernels(method: str = "loop") -> FusedKernels:
    """The fused element-wise kernels, ``method="loop"`` (calling thread) or ``"prange"``
    (rows split over numba's threads): the same numbers either way (the loss sums rows in a
    different order, so it agrees to round-off)."""
    return _KERNELS[check_choice(method, "method", ELEMENTWISE_METHODS)]


def step_flops(T: int, batch: int, nx: int, nh: int, ny: int, h0: bool = False) -> int:
    """GEMM FLOPs of one training step (element-wise work not counted).

    Forward: X Wxh, the T (or T−1 with a zero h0) recurrent products, H Why. Backward: Δŷ Whyᵀ,
    T−1 products Δz Whhᵀ, and the gradients Hᵀ Δŷ, H_{t-1}ᵀ Δz (T or T−1 terms), Xᵀ Δz.
    At the seed's size (T=10, B=n=1000, zero h0) that is 154 GFLOP.
    """
    T, batch, nx, nh, ny = (check_positive_int(v, n) for v, n in
                            ((T, "T"), (batch, "batch"), (nx, "nx"), (nh, "nh"), (ny, "ny")))
    h0 = check_bool(h0, "h0")
    rec = T if h0 else T - 1
    forward = 2 * T * batch * nx * nh + 2 * rec * batch * nh * nh + 2 * T * batch * nh * ny
    backward = 2 * T * batch * ny * nh + 2 * (T - 1) * batch * nh * nh
    grads = 2 * T * batch * nh * ny + 2 * rec * batch * nh * nh + 2 * T * batch * nx * nh
    return forward + backward + grads


# --------------------------------------------------------------------------- flops, validation
def _same(a: np.ndarray, name: str, dt: np.dtype) -> np.ndarray:
    if a.dtype != dt:
        raise TypeError(f"{name}: expected dtype {dt} (the dtype of params.Wxh), got {a.dtype}; "
                        f"convert with .astype(np.{dt.name})")
    return a


def prepare(params, X, Y, h0=None, workspace=None, *, groups=1):
    """Validate one step's inputs; returns ``(params, X, Y, h0, workspace)`` with C-contiguous arrays
    and a workspace that fits (allocated when None, with ``groups`` row groups: 1 by default, the kind
    the phase functions take; None lets :func:`auto_groups` choose). Errors name the argument."""
    if not isinstance(params, RNNParams):
        raise TypeError(f"params: expected an RNNParams, got {type(params).__name__}")
    dims: dict = {}
    Wxh = check_array(params.Wxh, "params.Wxh", shape=("nx", "nh"), dims=dims)
    dt = Wxh.dtype
    Whh = _same(check_array(params.Whh, "params.Whh", shape=("nh", "nh"), dims=dims), "params.Whh", dt)
    Why = _same(check_array(params.Why, "params.Why", shape=("nh", "ny"), dims=dims), "params.Why", dt)
    # X and Y are the big arrays: no separate finiteness pass over them here (it would cost
    # ~3% of a step); a non-finite loss is traced back to them afterwards (step_checks).
    X = _same(check_array(X, "X", shape=("T", "B", "nx"), dims=dims, finite=False), "X", dt)
    Y = _same(check_array(Y, "Y", shape=("T", "B", "ny"), dims=dims, finite=False), "Y", dt)
    X = np.ascontiguousarray(X)  # documented copy for strided input (reshape needs contiguity)
    Y = np.ascontiguousarray(Y)
    if h0 is not None:
        h0 = np.ascontiguousarray(_same(check_array(h0, "h0", shape=("B", "nh"), dims=dims), "h0", dt))
    T, B, nx, nh, ny = (dims[k] for k in ("T", "B", "nx", "nh", "ny"))
    if workspace is None:
        workspace = make_workspace(T, B, nx, nh, ny, dt, groups=groups)
    elif not isinstance(workspace, (Workspace, SplitWorkspace)):
        raise TypeError(f"workspace: expected a Workspace from make_workspace, got {type(workspace).__name__}")
    elif not workspace.fits(T, B, nx, nh, ny, dt):
        w = workspace
        raise ValueError(
            f"workspace: made for (T, B, nx, nh, ny, dtype) = {(w.T, w.batch, w.nx, w.nh, w.ny, w.dtype.name)}, "
            f"got arrays for {(T, B, nx, nh, ny, dt.name)}")
    params = RNNParams(np.ascontiguousarray(Wxh), np.ascontiguousarray(Whh), np.ascontiguousarray(Why))
    return params, X, Y, h0, workspace


# --------------------------------------------------------------------------- the phases
def _check_phase(ws, params=None, X=None, Y=None, h0=None) -> None:
    """O(1) checks of a phase function's arguments (types, shapes, dtypes, contiguity -- no pass over
    the data: the phases are what :mod:`course_lib.experiments.profile` times). Arrays are expected
    as :func:`prepare` returns them."""
    if not isinstance(ws, Workspace):
        split = " (a phase runs on one group: make_workspace(..., groups=1))" if isinstance(ws, SplitWorkspace) else ""
        raise TypeError(f"ws: expected a Workspace from make_workspace, got {type(ws).__name__}{split}")
    dt = ws.dtype
    if params is not None:
        if not isinstance(params, RNNParams):
            raise TypeError(f"params: expected an RNNParams, got {type(params).__name__}")
        for name, shape in (("Wxh", (ws.nx, ws.nh)), ("Whh", (ws.nh, ws.nh)), ("Why", (ws.nh, ws.ny))):
            check_array(getattr(params, name), f"params.{name}", shape=shape, dtype=dt, finite=False)
    for a, name, shape in ((X, "X", (ws.T, ws.batch, ws.nx)), (Y, "Y", (ws.T, ws.batch, ws.ny)),
                           (h0, "h0", (ws.batch, ws.nh))):
        if a is not None:
            check_array(a, name, shape=shape, dtype=dt, finite=False, contiguous=True)


def forward_into(ws: Workspace, params: RNNParams, X: np.ndarray, h0: np.ndarray | None = None) -> None:
    """ws.H <- all hidden states: one GEMM for every x_t Wxh, then T recurrent GEMMs, each
    followed by one fused ``tanh(z + h Whh)`` pass."""
    _check_phase(ws, params, X, h0=h0)
    T, B = ws.T, ws.batch
    H2 = ws.H.reshape(T * B, ws.nh)
    k = _KERNELS[ws.method]
    np.matmul(X.reshape(T * B, ws.nx), params.Wxh, out=H2)   # input projection, all t at once
    if h0 is None:
        k.tanh_inplace(ws.H[0])
    else:
        np.matmul(h0, params.Whh, out=ws.tmp)
        k.add_tanh(ws.H[0], ws.tmp)
    for t in range(1, T):
        np.matmul(ws.H[t - 1], params.Whh, out=ws.tmp)        # the recurrence
        k.add_tanh(ws.H[t], ws.tmp)


def output_pre_activation_into(ws: Workspace, params: RNNParams) -> None:
    """ws.D <- H Why for all time steps in one GEMM."""
    _check_phase(ws, params)
    T, B = ws.T, ws.batch
    np.matmul(ws.H.reshape(T * B, ws.nh), params.Why, out=ws.D.reshape(T * B, ws.ny))


def output_delta_into(ws: Workspace, Y: np.ndarray) -> float:
    """ws.D (pre-activations) <- 2(ŷ−y)(1−ŷ²) with ŷ = tanh(D); returns the loss Σ(ŷ−y)²."""
    _check_phase(ws, Y=Y)
    T, B = ws.T, ws.batch
    k = _KERNELS[ws.method]
    return float(k.output_delta_loss(ws.D.reshape(T * B, ws.ny), Y.reshape(T * B, ws.ny)))


def backward_into(ws: Workspace, params: RNNParams) -> None:
    """ws.DZ <- ∂E/∂(x_t Wxh + h_{t−1} Whh) for every t: one GEMM for the output's share
    Δŷ Whyᵀ, then the reverse sweep Δz_t = (Δh_t + Δz_{t+1} Whhᵀ)(1 − h_t²)."""
    _check_phase(ws, params)
    T, B = ws.T, ws.batch
    np.matmul(ws.D.reshape(T * B, ws.ny), params.Why.T, out=ws.DZ.reshape(T * B, ws.nh))
    k = _KERNELS[ws.method]
    k.tanh_backward_inplace(ws.DZ[T - 1], ws.H[T - 1])
    WhhT = params.Whh.T                                       # a view: BLAS uses its transpose flag
    for t in range(T - 2, -1, -1):
        np.matmul(ws.DZ[t + 1], WhhT, out=ws.tmp)
        k.add_tanh_backward(ws.DZ[t], ws.tmp, ws.H[t])


def weight_gradients_into(ws: Workspace, X: np.ndarray, h0: np.ndarray | None = None) -> None:
    """ws.gWhy <- Hᵀ Δŷ, ws.gWhh <- Σ_t h_{t−1}ᵀ Δz_t, ws.gWxh <- Xᵀ Δz: one GEMM each
    (the sum over time steps *is* the inner dimension of the GEMM)."""
    _check_phase(ws, X=X, h0=h0)
    T, B, nh = ws.T, ws.batch, ws.nh
    H2 = ws.H.reshape(T * B, nh)
    DZ2 = ws.DZ.reshape(T * B, nh)
    np.matmul(H2.T, ws.D.reshape(T * B, ws.ny), out=ws.gWhy)
    if T > 1:
        np.matmul(ws.H[:-1].reshape((T - 1) * B, nh).T, ws.DZ[1:].reshape((T - 1) * B, nh), out=ws.gWhh)
    else:
        ws.gWhh.fill(0)
    if h0 is not None:
        ws.gWhh += h0.T @ ws.DZ[0]
    np.matmul(X.reshape(T * B, ws.nx).T, DZ2, out=ws.gWxh)


def descend(params: RNNParams, ws: Workspace, lr: float, inplace: bool = False) -> RNNParams:
    """W − lr·g for the three matrices, one fused pass each (into ``params`` when ``inplace``)."""
    lr = check_float(lr, "lr", low=0.0)
    inplace = check_bool(inplace, "inplace")
    # float weights of the workspace's dtype: no silent integer truncation
    _check_phase(ws.parts[0] if isinstance(ws, SplitWorkspace) else ws, params)
    lr = ws.dtype.type(lr)
    outs = []
    for w, g in ((params.Wxh, ws.gWxh), (params.Whh, ws.gWhh), (params.Why, ws.gWhy)):
        out = w if inplace else np.empty_like(w)
        _KERNELS[ws.method].axpy_into(out, w, g, lr)
        outs.append(out)
    return RNNParams(*outs)


# --------------------------------------------------------------------------- the step
def gradients(params: RNNParams, X: np.ndarray, Y: np.ndarray, *, workspace=None,
              h0: np.ndarray | None = None) -> tuple[RNNParams, float]:
    """Loss and gradients (copies) of one batch, computed the fast way.

    X (T, B, nx), Y (T, B, ny), h0 (B, nh) or None (zeros). Returns ``(RNNParams(gWxh, gWhh, gWhy), loss)``.
    """
    params, X, Y, h0, ws = prepare(params, X, Y, h0, workspace, groups=1)
    loss = check_loss(_run(ws, params, X, Y, h0), X, Y, h0)
    check_grads((ws.gWxh, ws.gWhh, ws.gWhy), X, Y, h0)
    return RNNParams(ws.gWxh.copy(), ws.gWhh.copy(), ws.gWhy.copy()), loss


def _run(ws, params, X, Y, h0) -> float:
    """The step's phases into ``ws``; returns the loss, unchecked (a non-finite one skips the backward pass)."""
    if isinstance(ws, SplitWorkspace):
        return _run_groups(ws, params, X, Y, h0)
    forward_into(ws, params, X, h0)
    output_pre_activation_into(ws, params)
    loss = output_delta_into(ws, Y)
    if math.isfinite(loss):
        backward_into(ws, params)
        weight_gradients_into(ws, X, h0)
    return loss


def _run_group(ws: SplitWorkspace, params, X, Y, h0, g: int) -> float:
    """Group ``g``'s whole step on its rows of the batch (its inputs copied contiguous first)."""
    rows = ws.rows[g]
    np.copyto(ws.X[g], X[:, rows])
    np.copyto(ws.Y[g], Y[:, rows])
    return _run(ws.parts[g], params, ws.X[g], ws.Y[g], None if h0 is None else h0[rows])


@functools.cache
def _pool(threads: int, pid: int) -> ThreadPoolExecutor:
    """The groups' threads, made once per process (``pid``: a forked child has none of its parent's threads)."""
    return ThreadPoolExecutor(threads, thread_name_prefix="fast_rnn-group")


def _run_groups(ws: SplitWorkspace, params, X, Y, h0) -> float:
    """Every group's step, one thread each with one-thread BLAS, then the gradients summed into
    ``ws.parts[0]`` (a sum over the batch's rows is a sum over its groups). Never more threads than
    numba's count now (``backend.set_threads``): with fewer, groups wait their turn."""
    threads = min(ws.groups, backend.get_threads())
    run = functools.partial(_run_group, ws, params, X, Y, h0)
    if threads == 1:
        losses = [run(g) for g in range(ws.groups)]
    else:
        with backend.blas_threads(1):
            losses = list(_pool(threads, os.getpid()).map(run, range(ws.groups)))
    total = ws.parts[0]
    for part in ws.parts[1:]:
        for acc, g in ((total.gWxh, part.gWxh), (total.gWhh, part.gWhh), (total.gWhy, part.gWhy)):
            np.add(acc, g, out=acc)
    return float(sum(losses))


def train_step(params: RNNParams, X: np.ndarray, Y: np.ndarray, lr: float, *,
               workspace=None, h0: np.ndarray | None = None,
               inplace: bool = False, threads: int | None = None) -> tuple[RNNParams, float]:
    """One step of gradient descent on a batch; returns ``(new params, loss before the step)``.

    X (T, B, nx), Y (T, B, ny), same float dtype as the weights; h0 (B, nh) or None (zeros).
    ``workspace``: buffers from :func:`make_workspace` to reuse across steps (allocated here when
    None, one group; pass a :func:`make_workspace` with ``groups`` to split the batch).
    ``inplace=True`` updates the weight arrays of ``params`` instead of new ones.
    ``threads``: when given, calls ``backend.set_threads(threads)`` first (BLAS and numba).
    Same result as ``rnn.sgd_step(params, rnn.bptt_linear(params, X, Y, h0), lr)`` up to round-off.
    """
    lr = check_float(lr, "lr", low=0.0)
    inplace = check_bool(inplace, "inplace")
    if threads is not None:
        backend.set_threads(check_int(threads, "threads", low=1, high=int(numba.config.NUMBA_NUM_THREADS)))
    params, X, Y, h0, ws = prepare(params, X, Y, h0, workspace, groups=1)
    loss = check_loss(_run(ws, params, X, Y, h0), X, Y, h0)
    check_grads((ws.gWxh, ws.gWhh, ws.gWhy), X, Y, h0)
    return descend(params, ws, lr, inplace=inplace), loss
