"""The fastest CPU training step for the seed's RNN (layer 2: methods; chapter 05).

Same maths as :mod:`course_lib.models.rnn` (row vectors, time-major ``(T, B, features)``)::

    h_t  = tanh(x_t Wxh + h_{t-1} Whh)        ŷ_t = tanh(h_t Why)        E = Σ (ŷ_t − y_t)²

but organised the way the hardware likes it. Five ideas, each worth a chapter section:

1. **One GEMM for the input projection of all time steps.** ``x_t Wxh`` does not depend on
   ``h_{t-1}``, so ``X.reshape(T*B, nx) @ Wxh`` computes it for every ``t`` at once, into the
   buffer that will hold ``H``. Likewise ``H @ Why`` (all outputs), ``Δŷ @ Whyᵀ`` (the output's
   share of every hidden gradient) and the three weight gradients ``Hᵀ Δŷ``, ``H_{t-1}ᵀ Δz``,
   ``Xᵀ Δz`` are *one* big GEMM each. Only ``h_{t-1} Whh`` (forward) and ``Δz_{t+1} Whhᵀ``
   (backward) stay inside the time loop: that is the recurrence.
2. **Preallocated workspaces** (:class:`Workspace`): every intermediate has a home allocated
   once and reused across steps; GEMMs write into it with ``np.matmul(..., out=...)``. Nothing
   is "saved": ``H`` is computed in place where the backward pass will read it.
3. **Fused element-wise kernels** (numba; serial or ``prange`` over rows): ``tanh(z + h Whh)`` in one pass;
   ``ŷ = tanh(·)``, the loss and the output delta ``2(ŷ−y)(1−ŷ²)`` in one pass; ``(Δh +
   Δz Whhᵀ)(1−h²)`` in one pass; ``W − lr·g`` in one pass. float32 uses a vectorisable
   rational ``tanh`` (max error ~3e-7; libm's scalar ``tanhf`` does not vectorise), and every
   kernel is compiled with ``error_model="numpy"``: numba's default Python error model checks
   each division for zero (to raise ZeroDivisionError), and that branch stops LLVM from
   vectorising the loop -- measured here, 10x slower.
4. **BLAS with the layout that suits it**: transposes are views (``Whh.T``, ``H.T``), which
   BLAS reads with its transpose flag -- no copies.
5. **Threads** for BLAS (and, optionally, numba), set together with
   :func:`course_lib.core.backend.set_threads`. By default the fused passes stay on the calling
   thread (see :func:`make_workspace`): the GEMMs carry ~95% of the FLOPs and get every thread.

Public API
----------
``make_workspace(T, B, nx, nh, ny, dtype=np.float32, *, parallel_elementwise=False) -> Workspace``
``train_step(params, X, Y, lr, *, workspace=None, h0=None, inplace=False, threads=None) -> (params, loss)``
``gradients(params, X, Y, *, workspace=None, h0=None) -> (RNNParams of gradients, loss)``
``step_flops(T, B, nx, nh, ny, h0=False)`` -- GEMM FLOPs of one step (what GFLOP/s counts)
``NumpyStep(T, B, nx, nh, ny)`` -- the same step with one numpy pass per element-wise operation

The phase functions (``forward_into``, ``output_pre_activation_into``, ``output_delta_into``, ``backward_into``,
``weight_gradients_into``, ``descend``) are public so :mod:`course_lib.experiments.profile` can time them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit, prange, types
from numba.extending import overload

from ..core import backend
from .rnn import RNNParams
from ..core.validate import check_array, check_float, check_positive_int

__all__ = [
    "Workspace",
    "make_workspace",
    "train_step",
    "gradients",
    "step_flops",
    "forward_into",
    "output_pre_activation_into",
    "output_delta_into",
    "backward_into",
    "weight_gradients_into",
    "descend",
    "fast_tanh",
    "NumpyStep",
]


# --------------------------------------------------------------------------- a tanh that vectorises
def fast_tanh(x):
    """``tanh`` for use inside numba kernels: a vectorisable rational approximation for float32
    (max abs error ~3e-7, the same as Eigen's), ``math.tanh`` for float64."""
    return math.tanh(x)


@njit(fastmath=True, error_model="numpy", cache=True, inline="always")
def _tanh32(x):
    # Eigen's float tanh: clamp, then an odd 13/6 rational polynomial. Pure arithmetic, so the
    # compiler turns a loop of these into AVX/AVX-512 instructions.
    x = min(max(x, np.float32(-7.90531110763549805)), np.float32(7.90531110763549805))
    x2 = x * x
    p = np.float32(-2.76076847742355e-16)
    p = p * x2 + np.float32(2.00018790482477e-13)
    p = p * x2 + np.float32(-8.60467152213735e-11)
    p = p * x2 + np.float32(5.12229709037114e-08)
    p = p * x2 + np.float32(1.48572235717979e-05)
    p = p * x2 + np.float32(6.37261928875436e-04)
    p = p * x2 + np.float32(4.89352455891786e-03)
    q = np.float32(1.19825839466702e-06)
    q = q * x2 + np.float32(1.18534705686654e-04)
    q = q * x2 + np.float32(2.26843463243900e-03)
    q = q * x2 + np.float32(4.89352518554385e-03)
    return x * p / q


@overload(fast_tanh, inline="always")
def _fast_tanh_overload(x):
    if x == types.float32:
        return lambda x: _tanh32(x)
    return lambda x: math.tanh(x)


# --------------------------------------------------------------------------- fused kernels
# Each operation is written once, for one row (inline, vectorised by LLVM), and driven over the
# rows twice: serially and with ``prange``. ``Workspace.parallel_elementwise`` picks the driver.
@njit(fastmath=True, error_model="numpy", cache=True, inline="always")
def _tanh_row(z):
    for j in range(z.shape[0]):
        z[j] = fast_tanh(z[j])


@njit(fastmath=True, error_model="numpy", cache=True, inline="always")
def _add_tanh_row(z, r):
    for j in range(z.shape[0]):
        z[j] = fast_tanh(z[j] + r[j])


@njit(fastmath=True, error_model="numpy", cache=True, inline="always")
def _output_delta_loss_row(z, y):
    part = z.dtype.type(0)  # in the row's dtype (a float64 accumulator would block SIMD for float32)
    for j in range(z.shape[0]):
        yh = fast_tanh(z[j])
        e = yh - y[j]
        part += e * e
        z[j] = (e + e) * (np.float32(1) - yh * yh)
    return part


@njit(fastmath=True, error_model="numpy", cache=True, inline="always")
def _tanh_backward_row(dz, h):
    for j in range(dz.shape[0]):
        dz[j] = dz[j] * (np.float32(1) - h[j] * h[j])


@njit(fastmath=True, error_model="numpy", cache=True, inline="always")
def _add_tanh_backward_row(dz, r, h):
    for j in range(dz.shape[0]):
        dz[j] = (dz[j] + r[j]) * (np.float32(1) - h[j] * h[j])


@njit(fastmath=True, error_model="numpy", cache=True, inline="always")
def _axpy_row(out, w, g, lr):
    for j in range(w.shape[0]):
        out[j] = w[j] - lr * g[j]


# serial drivers -------------------------------------------------------------
@njit(fastmath=True, error_model="numpy", cache=True)
def _tanh_inplace(z):
    """z (B, n) <- tanh(z)."""
    for i in range(z.shape[0]):
        _tanh_row(z[i])


@njit(fastmath=True, error_model="numpy", cache=True)
def _add_tanh(z, r):
    """z (B, n) <- tanh(z + r): the input projection plus the recurrent product, activated."""
    for i in range(z.shape[0]):
        _add_tanh_row(z[i], r[i])


@njit(fastmath=True, error_model="numpy", cache=True)
def _output_delta_loss(z, y):
    """z (N, ny) pre-activations in, output delta out: ŷ = tanh(z); z <- 2(ŷ−y)(1−ŷ²).
    Returns Σ(ŷ−y)² (row sums in the data's dtype, added up in float64). Three passes of the
    naive code in one."""
    total = 0.0
    for i in range(z.shape[0]):
        total += _output_delta_loss_row(z[i], y[i])
    return total


@njit(fastmath=True, error_model="numpy", cache=True)
def _tanh_backward_inplace(dz, h):
    """dz (B, n) <- dz * (1 − h²)."""
    for i in range(dz.shape[0]):
        _tanh_backward_row(dz[i], h[i])


@njit(fastmath=True, error_model="numpy", cache=True)
def _add_tanh_backward(dz, r, h):
    """dz (B, n) <- (dz + r) * (1 − h²): the output's and the future's gradient, through tanh."""
    for i in range(dz.shape[0]):
        _add_tanh_backward_row(dz[i], r[i], h[i])


@njit(fastmath=True, error_model="numpy", cache=True)
def _axpy_into(out, w, g, lr):
    """out (m, n) <- w − lr * g (out may be w itself)."""
    for i in range(w.shape[0]):
        _axpy_row(out[i], w[i], g[i], lr)


# parallel drivers: the same rows, split across numba's threads -------------
@njit(parallel=True, fastmath=True, error_model="numpy", cache=True)
def _tanh_inplace_par(z):
    for i in prange(z.shape[0]):
        _tanh_row(z[i])


@njit(parallel=True, fastmath=True, error_model="numpy", cache=True)
def _add_tanh_par(z, r):
    for i in prange(z.shape[0]):
        _add_tanh_row(z[i], r[i])


@njit(parallel=True, fastmath=True, error_model="numpy", cache=True)
def _output_delta_loss_par(z, y):
    total = 0.0
    for i in prange(z.shape[0]):
        total += _output_delta_loss_row(z[i], y[i])
    return total


@njit(parallel=True, fastmath=True, error_model="numpy", cache=True)
def _tanh_backward_inplace_par(dz, h):
    for i in prange(dz.shape[0]):
        _tanh_backward_row(dz[i], h[i])


@njit(parallel=True, fastmath=True, error_model="numpy", cache=True)
def _add_tanh_backward_par(dz, r, h):
    for i in prange(dz.shape[0]):
        _add_tanh_backward_row(dz[i], r[i], h[i])


@njit(parallel=True, fastmath=True, error_model="numpy", cache=True)
def _axpy_into_par(out, w, g, lr):
    for i in prange(w.shape[0]):
        _axpy_row(out[i], w[i], g[i], lr)


class _Kernels:
    def __init__(self, parallel: bool):
        sfx = "_par" if parallel else ""
        for name in ("_tanh_inplace", "_add_tanh", "_output_delta_loss", "_tanh_backward_inplace",
                     "_add_tanh_backward", "_axpy_into"):
            setattr(self, name.lstrip("_"), globals()[name + sfx])


_KERNELS = {False: _Kernels(False), True: _Kernels(True)}


# --------------------------------------------------------------------------- workspace
@dataclass
class Workspace:
    """Buffers for one training step, allocated once and reused.

    H   (T, B, nh)  hidden states (first the input projection X Wxh, then tanh'd in place)
    D   (T, B, ny)  output pre-activations, then the output delta 2(ŷ−y)(1−ŷ²) in place
    DZ  (T, B, nh)  hidden delta through tanh (first Δŷ Whyᵀ, then the recurrence in place)
    tmp (B, nh)     the recurrent product of one time step
    gWxh, gWhh, gWhy  gradients (nx, nh), (nh, nh), (nh, ny)
    parallel_elementwise  run the fused element-wise kernels with ``prange`` (numba's threads)
                          instead of on the calling thread (BLAS threads are used either way)
    """

    T: int
    B: int
    nx: int
    nh: int
    ny: int
    dtype: np.dtype
    H: np.ndarray
    D: np.ndarray
    DZ: np.ndarray
    tmp: np.ndarray
    gWxh: np.ndarray
    gWhh: np.ndarray
    gWhy: np.ndarray
    parallel_elementwise: bool = False

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.H, self.D, self.DZ, self.tmp, self.gWxh, self.gWhh, self.gWhy))

    def fits(self, T, B, nx, nh, ny, dtype) -> bool:
        return (self.T, self.B, self.nx, self.nh, self.ny, self.dtype) == (T, B, nx, nh, ny, np.dtype(dtype))


def make_workspace(T: int, B: int, nx: int, nh: int, ny: int, dtype=np.float32, *,
                   parallel_elementwise: bool = False) -> Workspace:
    """Allocate the buffers of one training step for sequences ``(T, B, nx)`` -> ``(T, B, ny)``.

    ``parallel_elementwise=False`` (default) keeps the fused element-wise passes on the calling
    thread: they are memory-bound (a second thread gains little) and, between two multi-threaded
    BLAS calls, a numba parallel region must wait for cores that BLAS's idle threads are still
    spinning on -- on a 2-core or busy machine that wait costs more than the second thread gains.
    ``True`` splits them across numba's threads (chapter 05 measures both).
    """
    T, B, nx, nh, ny = (check_positive_int(v, n) for v, n in
                        ((T, "T"), (B, "B"), (nx, "nx"), (nh, "nh"), (ny, "ny")))
    dt = np.dtype(dtype)
    if dt not in (np.float32, np.float64):
        raise TypeError(f"dtype: expected float32 or float64, got {dt}")
    e = lambda *s: np.empty(s, dt)  # noqa: E731
    if not isinstance(parallel_elementwise, (bool, np.bool_)):
        raise TypeError(f"parallel_elementwise: expected a bool, got {type(parallel_elementwise).__name__}")
    return Workspace(T, B, nx, nh, ny, dt, H=e(T, B, nh), D=e(T, B, ny), DZ=e(T, B, nh), tmp=e(B, nh),
                     gWxh=e(nx, nh), gWhh=e(nh, nh), gWhy=e(nh, ny), parallel_elementwise=bool(parallel_elementwise))


def step_flops(T: int, B: int, nx: int, nh: int, ny: int, h0: bool = False) -> int:
    """GEMM FLOPs of one training step (element-wise work not counted).

    Forward: X Wxh, the T (or T−1 with a zero h0) recurrent products, H Why. Backward: Δŷ Whyᵀ,
    T−1 products Δz Whhᵀ, and the gradients Hᵀ Δŷ, H_{t-1}ᵀ Δz (T or T−1 terms), Xᵀ Δz.
    At the seed's size (T=10, B=n=1000, zero h0) that is 154 GFLOP.
    """
    T, B, nx, nh, ny = (check_positive_int(v, n) for v, n in
                        ((T, "T"), (B, "B"), (nx, "nx"), (nh, "nh"), (ny, "ny")))
    rec = T if h0 else T - 1
    forward = 2 * T * B * nx * nh + 2 * rec * B * nh * nh + 2 * T * B * nh * ny
    backward = 2 * T * B * ny * nh + 2 * (T - 1) * B * nh * nh
    grads = 2 * T * B * nh * ny + 2 * rec * B * nh * nh + 2 * T * B * nx * nh
    return forward + backward + grads


# --------------------------------------------------------------------------- validation
def _same(a: np.ndarray, name: str, dt: np.dtype) -> np.ndarray:
    if a.dtype != dt:
        raise TypeError(f"{name}: expected dtype {dt} (the dtype of params.Wxh), got {a.dtype}; "
                        f"convert with .astype(np.{dt.name})")
    return a


def _validate(params, X, Y, h0, workspace):
    if not isinstance(params, RNNParams):
        raise TypeError(f"params: expected an RNNParams, got {type(params).__name__}")
    dims: dict = {}
    Wxh = check_array(params.Wxh, "params.Wxh", shape=("nx", "nh"), dims=dims)
    dt = Wxh.dtype
    Whh = _same(check_array(params.Whh, "params.Whh", shape=("nh", "nh"), dims=dims), "params.Whh", dt)
    Why = _same(check_array(params.Why, "params.Why", shape=("nh", "ny"), dims=dims), "params.Why", dt)
    # X and Y are the big arrays: no separate finiteness pass over them here (it would cost
    # ~3% of a step); a non-finite loss is traced back to them afterwards (_check_loss).
    X = _same(check_array(X, "X", shape=("T", "B", "nx"), dims=dims, finite=False), "X", dt)
    Y = _same(check_array(Y, "Y", shape=("T", "B", "ny"), dims=dims, finite=False), "Y", dt)
    X = np.ascontiguousarray(X)  # documented copy for strided input (reshape needs contiguity)
    Y = np.ascontiguousarray(Y)
    if h0 is not None:
        h0 = np.ascontiguousarray(_same(check_array(h0, "h0", shape=("B", "nh"), dims=dims), "h0", dt))
    T, B, nx, nh, ny = (dims[k] for k in ("T", "B", "nx", "nh", "ny"))
    if workspace is None:
        workspace = make_workspace(T, B, nx, nh, ny, dt)
    elif not isinstance(workspace, Workspace):
        raise TypeError(f"workspace: expected a Workspace from make_workspace, got {type(workspace).__name__}")
    elif not workspace.fits(T, B, nx, nh, ny, dt):
        w = workspace
        raise ValueError(
            f"workspace: made for (T, B, nx, nh, ny, dtype) = {(w.T, w.B, w.nx, w.nh, w.ny, w.dtype.name)}, "
            f"got arrays for {(T, B, nx, nh, ny, dt.name)}")
    params = RNNParams(np.ascontiguousarray(Wxh), np.ascontiguousarray(Whh), np.ascontiguousarray(Why))
    return params, X, Y, h0, workspace


def _check_loss(loss: float, X, Y, h0) -> float:
    """A non-finite loss means non-finite inputs (named here) or diverged weights."""
    if not math.isfinite(loss):
        for a, name in ((X, "X"), (Y, "Y"), (h0, "h0")):
            if a is not None:
                check_array(a, name, dtype=None)  # raises ValueError naming the first bad entry
        raise FloatingPointError(f"the loss is {loss}: the weights have diverged; use a smaller lr")
    return loss


# --------------------------------------------------------------------------- the phases
def forward_into(ws: Workspace, params: RNNParams, X: np.ndarray, h0: np.ndarray | None = None) -> None:
    """ws.H <- all hidden states: one GEMM for every x_t Wxh, then T recurrent GEMMs, each
    followed by one fused ``tanh(z + h Whh)`` pass."""
    T, B = ws.T, ws.B
    H2 = ws.H.reshape(T * B, ws.nh)
    k = _KERNELS[ws.parallel_elementwise]
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
    T, B = ws.T, ws.B
    np.matmul(ws.H.reshape(T * B, ws.nh), params.Why, out=ws.D.reshape(T * B, ws.ny))


def output_delta_into(ws: Workspace, Y: np.ndarray) -> float:
    """ws.D (pre-activations) <- 2(ŷ−y)(1−ŷ²) with ŷ = tanh(D); returns the loss Σ(ŷ−y)²."""
    T, B = ws.T, ws.B
    k = _KERNELS[ws.parallel_elementwise]
    return float(k.output_delta_loss(ws.D.reshape(T * B, ws.ny), Y.reshape(T * B, ws.ny)))


def backward_into(ws: Workspace, params: RNNParams) -> None:
    """ws.DZ <- ∂E/∂(x_t Wxh + h_{t−1} Whh) for every t: one GEMM for the output's share
    Δŷ Whyᵀ, then the reverse sweep Δz_t = (Δh_t + Δz_{t+1} Whhᵀ)(1 − h_t²)."""
    T, B = ws.T, ws.B
    np.matmul(ws.D.reshape(T * B, ws.ny), params.Why.T, out=ws.DZ.reshape(T * B, ws.nh))
    k = _KERNELS[ws.parallel_elementwise]
    k.tanh_backward_inplace(ws.DZ[T - 1], ws.H[T - 1])
    WhhT = params.Whh.T                                       # a view: BLAS uses its transpose flag
    for t in range(T - 2, -1, -1):
        np.matmul(ws.DZ[t + 1], WhhT, out=ws.tmp)
        k.add_tanh_backward(ws.DZ[t], ws.tmp, ws.H[t])


def weight_gradients_into(ws: Workspace, X: np.ndarray, h0: np.ndarray | None = None) -> None:
    """ws.gWhy <- Hᵀ Δŷ, ws.gWhh <- Σ_t h_{t−1}ᵀ Δz_t, ws.gWxh <- Xᵀ Δz: one GEMM each
    (the sum over time steps *is* the inner dimension of the GEMM)."""
    T, B, nh = ws.T, ws.B, ws.nh
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
    lr = params.Wxh.dtype.type(lr)
    outs = []
    for w, g in ((params.Wxh, ws.gWxh), (params.Whh, ws.gWhh), (params.Why, ws.gWhy)):
        out = w if inplace else np.empty_like(w)
        _KERNELS[ws.parallel_elementwise].axpy_into(out, w, g, lr)
        outs.append(out)
    return RNNParams(*outs)


# --------------------------------------------------------------------------- the step
def gradients(params: RNNParams, X: np.ndarray, Y: np.ndarray, *, workspace: Workspace | None = None,
              h0: np.ndarray | None = None) -> tuple[RNNParams, float]:
    """Loss and gradients (copies) of one batch, computed the fast way.

    X (T, B, nx), Y (T, B, ny), h0 (B, nh) or None (zeros). Returns ``(RNNParams(gWxh, gWhh, gWhy), loss)``.
    """
    params, X, Y, h0, ws = _validate(params, X, Y, h0, workspace)
    loss = _run(ws, params, X, Y, h0)
    return RNNParams(ws.gWxh.copy(), ws.gWhh.copy(), ws.gWhy.copy()), loss


def _run(ws, params, X, Y, h0) -> float:
    forward_into(ws, params, X, h0)
    output_pre_activation_into(ws, params)
    loss = _check_loss(output_delta_into(ws, Y), X, Y, h0)
    backward_into(ws, params)
    weight_gradients_into(ws, X, h0)
    return loss


def train_step(params: RNNParams, X: np.ndarray, Y: np.ndarray, lr: float, *,
               workspace: Workspace | None = None, h0: np.ndarray | None = None,
               inplace: bool = False, threads: int | None = None) -> tuple[RNNParams, float]:
    """One step of gradient descent on a batch; returns ``(new params, loss before the step)``.

    X (T, B, nx), Y (T, B, ny), same float dtype as the weights; h0 (B, nh) or None (zeros).
    ``workspace``: buffers from :func:`make_workspace` to reuse across steps (allocated here when
    None). ``inplace=True`` updates the weight arrays of ``params`` instead of new ones.
    ``threads``: when given, calls ``backend.set_threads(threads)`` first (BLAS and numba).
    Same result as ``rnn.sgd_step(params, rnn.bptt_linear(params, X, Y, h0), lr)`` up to round-off.
    """
    lr = check_float(lr, "lr", low=0.0)
    if threads is not None:
        backend.set_threads(threads)
    params, X, Y, h0, ws = _validate(params, X, Y, h0, workspace)
    loss = _run(ws, params, X, Y, h0)
    return descend(params, ws, lr, inplace=inplace), loss


# --------------------------------------------------------------------------- the same step, unfused
class NumpyStep:
    """Plain numpy, written carefully: one GEMM for each of X Wxh, H Why, Δŷ Whyᵀ and the three
    gradients, preallocated buffers, ``np.matmul(..., out=)`` and ufuncs with ``out=`` -- but no
    fused kernels: each element-wise operation is its own pass over memory, single-threaded.
    The "separate passes" side of chapter 05's fusion comparison and a benchmark column."""

    def __init__(self, T, B, nx, nh, ny, dtype=np.float32):
        self.shape = (T, B, nx, nh, ny)
        e = lambda *s: np.empty(s, dtype)  # noqa: E731
        self.H, self.D, self.DZ = e(T, B, nh), e(T, B, ny), e(T, B, nh)
        self.tmp, self.tmp2 = e(B, nh), e(T, B, ny)
        self.g = [e(nx, nh), e(nh, nh), e(nh, ny)]

    def __call__(self, p: RNNParams, X: np.ndarray, Y: np.ndarray, lr: float):
        """One step, updating ``p``'s arrays in place; returns ``(p, loss)``. X (T, B, nx), Y (T, B, ny)."""
        T, B, nx = X.shape
        if (T, B, nx, p.nh, p.ny) != self.shape:
            raise ValueError(f"X, params: this NumpyStep was made for (T, B, nx, nh, ny) = {self.shape}, "
                             f"got {(T, B, nx, p.nh, p.ny)}")
        nh, ny = p.Whh.shape[0], p.Why.shape[1]
        H, D, DZ, tmp, tmp2 = self.H, self.D, self.DZ, self.tmp, self.tmp2
        H2, D2, DZ2 = H.reshape(T * B, nh), D.reshape(T * B, ny), DZ.reshape(T * B, nh)
        np.matmul(X.reshape(T * B, nx), p.Wxh, out=H2)
        np.tanh(H[0], out=H[0])
        for t in range(1, T):
            np.matmul(H[t - 1], p.Whh, out=tmp)
            np.add(H[t], tmp, out=H[t])
            np.tanh(H[t], out=H[t])
        np.matmul(H2, p.Why, out=D2)
        np.tanh(D, out=D)                              # ŷ
        np.subtract(D, Y, out=tmp2)                    # e = ŷ − y
        loss = float(np.vdot(tmp2, tmp2))
        np.multiply(D, D, out=D)                       # ŷ²
        np.subtract(1, D, out=D)                       # 1 − ŷ²
        np.multiply(D, tmp2, out=D)
        np.multiply(D, 2, out=D)                       # Δŷ = 2 e (1 − ŷ²)
        np.matmul(D2, p.Why.T, out=DZ2)
        sq = tmp2.reshape(T, B, ny)[0] if ny == nh else np.empty((B, nh), H.dtype)
        for t in range(T - 1, -1, -1):
            if t < T - 1:
                np.matmul(DZ[t + 1], p.Whh.T, out=tmp)
                np.add(DZ[t], tmp, out=DZ[t])
            np.multiply(H[t], H[t], out=sq)
            np.subtract(1, sq, out=sq)
            np.multiply(DZ[t], sq, out=DZ[t])
        gx, gh, gy = self.g
        np.matmul(H2.T, D2, out=gy)
        np.matmul(H[:-1].reshape((T - 1) * B, nh).T, DZ[1:].reshape((T - 1) * B, nh), out=gh)
        np.matmul(X.reshape(T * B, nx).T, DZ2, out=gx)
        for w, g in zip((p.Wxh, p.Whh, p.Why), self.g):
            g *= lr
            w -= g
        return p, loss
