"""Parallel inference for a stacked softmax RNN (layer 2: methods; chapter 07, seed 004).

The model is the seed's pseudocode, stacked ``L`` layers deep, in the **column-vector**
convention of the seed (layer ``l`` reads the hidden state of layer ``l-1``; layer 0 reads ``x``)::

    a[l, t] = b_l + W_l h[l, t-1] + U_l h[l-1, t]        h[-1, t] = x[t],  h[l, -1] = 0
    h[l, t] = tanh(a[l, t])
    o[t]    = c + V h[L-1, t]
    y[t]    = softmax(o[t])

Shapes: ``U_l (H, n_in)``, ``W_l (H, H)``, ``b_l (H,)``, ``V (vocab, H)``, ``c (vocab,)``.
Inputs are time-major ``X (T, B, nx)``; outputs are probabilities ``(T, B, vocab)``. With a batch
of row vectors the same maths reads ``A = X U^T + H W^T + b`` -- that is how the batched code is
written.

Every execution strategy returns the same probabilities (to float round-off):

=============  ===========================================================================
``serial``     the seed's loop: one sequence, one time step, one layer at a time (GEMV)
``batched``    all sequences together: GEMMs of ``(B, n) @ (n, H)`` (chapter 03)
``threads``    shared memory: a thread pool splits the batch; BLAS releases the GIL
``wavefront``  cells ``(l, t)`` on one anti-diagonal ``l + t = d`` run concurrently
``mpi``        message passing: ``mpiexec -n P`` ranks get a slice of the batch each
``cuda``       a numba CUDA kernel per cell step (a GPU, or numba's CUDA simulator)
=============  ===========================================================================

Public API: :func:`init_params`, :func:`predict`, :func:`encode`, :func:`one_hot`,
:func:`softmax`, :func:`wavefront_schedule`, :func:`split_batch`, :func:`scatter_batch`,
:func:`gather_chunks`, :func:`run_mpi`, :func:`work_span`, :func:`measure_strategies` and the
per-strategy ``predict_*`` functions.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core import backend
from ..data.corpus import one_hot as _one_hot
from ..core.timing import measure
from ..core.validate import check_array, check_choice, check_float, check_int, check_positive_int

__all__ = [
    "Layer",
    "Params",
    "STRATEGIES",
    "init_params",
    "check_params",
    "encode",
    "one_hot",
    "softmax",
    "cell_step",
    "output_probs",
    "predict",
    "predict_serial",
    "predict_batched",
    "predict_threads",
    "predict_wavefront",
    "predict_cuda",
    "predict_mpi",
    "wavefront_schedule",
    "split_batch",
    "scatter_batch",
    "gather_chunks",
    "MPIResult",
    "MPIFailed",
    "run_mpi",
    "work_span",
    "data_parallel_model",
    "measure_strategies",
    "inference_flops",
]

STRATEGIES = ("serial", "batched", "threads", "wavefront", "mpi", "cuda")


# --------------------------------------------------------------------------- parameters
@dataclass
class Layer:
    """One recurrent layer: ``U (H, n_in)``, ``W (H, H)``, ``b (H,)``."""

    U: np.ndarray
    W: np.ndarray
    b: np.ndarray


@dataclass
class Params:
    """A stacked softmax RNN: ``layers[l]`` (see :class:`Layer`), output ``V (vocab, H)``, ``c (vocab,)``."""

    layers: list
    V: np.ndarray
    c: np.ndarray

    @property
    def nx(self) -> int:
        return int(self.layers[0].U.shape[1])

    @property
    def nh(self) -> int:
        return int(self.layers[-1].W.shape[0])

    @property
    def vocab(self) -> int:
        return int(self.V.shape[0])

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def dtype(self):
        return self.V.dtype

    def astype(self, dtype) -> "Params":
        """A copy with every array cast to ``dtype``."""
        dt = np.dtype(dtype)
        return Params([Layer(L.U.astype(dt), L.W.astype(dt), L.b.astype(dt)) for L in self.layers],
                      self.V.astype(dt), self.c.astype(dt))

    def arrays(self) -> dict:
        """Flat ``{"U0": .., "W0": .., "b0": .., ..., "V": .., "c": ..}`` (for ``np.savez``)."""
        out = {}
        for i, L in enumerate(self.layers):
            out[f"U{i}"], out[f"W{i}"], out[f"b{i}"] = L.U, L.W, L.b
        out["V"], out["c"] = self.V, self.c
        return out

    @classmethod
    def from_arrays(cls, arrays) -> "Params":
        """Inverse of :meth:`arrays` (accepts an ``np.load`` result)."""
        n = sum(1 for k in arrays.keys() if k.startswith("U"))
        layers = [Layer(np.asarray(arrays[f"U{i}"]), np.asarray(arrays[f"W{i}"]), np.asarray(arrays[f"b{i}"]))
                  for i in range(n)]
        return cls(layers, np.asarray(arrays["V"]), np.asarray(arrays["c"]))


def init_params(nx: int, nh: int, vocab: int, *, layers: int = 1, seed: int = 0, dtype=np.float32) -> Params:
    """Random parameters: entries ~ U(-1/sqrt(n_in), 1/sqrt(n_in)), biases zero.

    ``nx`` input features, ``nh`` hidden units per layer, ``vocab`` output classes, ``layers`` deep.
    """
    nx = check_positive_int(nx, "nx")
    nh = check_positive_int(nh, "nh")
    vocab = check_positive_int(vocab, "vocab")
    layers = check_positive_int(layers, "layers")
    seed = check_int(seed, "seed", low=0)
    dt = np.dtype(dtype)
    if dt not in (np.float32, np.float64):
        raise TypeError(f"dtype: expected float32 or float64, got {dt}")
    rng = np.random.default_rng(seed)

    def uni(shape, fan_in):
        s = 1.0 / math.sqrt(fan_in)
        return rng.uniform(-s, s, size=shape).astype(dt)

    out = []
    n_in = nx
    for _ in range(layers):
        out.append(Layer(uni((nh, n_in), n_in), uni((nh, nh), nh), np.zeros(nh, dt)))
        n_in = nh
    return Params(out, uni((vocab, nh), nh), np.zeros(vocab, dt))


def check_params(params, name: str = "params") -> Params:
    """Validate a :class:`Params`: consistent layer sizes and one float dtype. Returns it."""
    if not isinstance(params, Params):
        raise TypeError(f"{name}: expected a course_lib.parallel.inference.Params (from init_params), got {type(params).__name__}")
    if not params.layers:
        raise ValueError(f"{name}.layers: expected at least one layer, got none")
    dt = params.V.dtype
    n_in = params.layers[0].U.shape[1] if np.ndim(params.layers[0].U) == 2 else None
    for i, L in enumerate(params.layers):
        dims: dict = {}
        U = check_array(L.U, f"{name}.layers[{i}].U", shape=("H", n_in), dims=dims)
        check_array(L.W, f"{name}.layers[{i}].W", shape=("H", "H"), dims=dims)
        check_array(L.b, f"{name}.layers[{i}].b", shape=("H",), dims=dims)
        for nm, arr in (("U", L.U), ("W", L.W), ("b", L.b)):
            if arr.dtype != dt:
                raise TypeError(f"{name}.layers[{i}].{nm}: expected dtype {dt} (the dtype of V), got {arr.dtype}")
        n_in = U.shape[0]
    check_array(params.V, f"{name}.V", shape=(None, n_in))
    check_array(params.c, f"{name}.c", shape=(params.V.shape[0],))
    if params.c.dtype != dt:
        raise TypeError(f"{name}.c: expected dtype {dt} (the dtype of V), got {params.c.dtype}")
    return params


def _check_X(params: Params, X, name: str = "X") -> np.ndarray:
    X = check_array(X, name, shape=("T", "B", params.nx))
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name}: expected at least one time step and one sequence, got shape {X.shape} (empty)")
    return X.astype(params.dtype, copy=False)


# --------------------------------------------------------------------------- helpers
def one_hot(ids, vocab_size: int, dtype=np.float32) -> np.ndarray:
    """One-hot features ``(...,) -> (..., vocab_size)`` (re-exported from :mod:`course_lib.data.corpus`)."""
    return _one_hot(ids, vocab_size, dtype=dtype)


def encode(ids, vocab_size: int, dtype=np.float32) -> np.ndarray:
    """Token ids ``(T, B)`` (or ``(T,)`` for one sequence) -> one-hot inputs ``X (T, B, vocab_size)``.

    Raises ValueError for ids outside ``[0, vocab_size)`` and for empty sequences.
    """
    ids = check_array(ids, "ids", ndim=(1, 2), dtype="int", finite=False)
    if ids.ndim == 1:
        ids = ids[:, None]
    if ids.size == 0:
        raise ValueError(f"ids: expected a non-empty (T, B) array of token ids, got shape {ids.shape}")
    return _one_hot(ids, vocab_size, dtype=dtype)


def softmax(o, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax: ``exp(o - max o) / sum exp(o - max o)`` along ``axis``."""
    o = check_array(o, "o")
    z = o - o.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def cell_step(layer: Layer, x: np.ndarray, h: np.ndarray) -> np.ndarray:
    """One cell for a batch of rows: ``tanh(x U^T + h W^T + b)``; ``x (B, n_in)``, ``h (B, H)`` -> ``(B, H)``."""
    return np.tanh(x @ layer.U.T + h @ layer.W.T + layer.b)


def output_probs(params: Params, h: np.ndarray) -> np.ndarray:
    """``softmax(h V^T + c)`` for ``h (..., H)`` -> ``(..., vocab)``."""
    return softmax(h @ params.V.T + params.c)


# --------------------------------------------------------------------------- strategies
def predict_serial(params: Params, X) -> np.ndarray:
    """The seed's loop, column vectors: for each sequence, each time step, each layer (GEMV)."""
    params = check_params(params)
    X = _check_X(params, X)
    T, B, _ = X.shape
    Y = np.empty((T, B, params.vocab), params.dtype)
    for s in range(B):
        h = [np.zeros(L.W.shape[0], params.dtype) for L in params.layers]
        for t in range(T):
            below = X[t, s]
            for l, L in enumerate(params.layers):
                a = L.b + L.W @ h[l] + L.U @ below
                h[l] = np.tanh(a)
                below = h[l]
            o = params.c + params.V @ below
            Y[t, s] = softmax(o)
    return Y


def _batched_core(params: Params, X: np.ndarray) -> np.ndarray:
    """No validation: layer by layer, the input projection of all T steps is one GEMM."""
    T, B, _ = X.shape
    below = X
    for L in params.layers:
        H = L.W.shape[0]
        Z = (below.reshape(T * B, -1) @ L.U.T + L.b).reshape(T, B, H)
        hs = np.empty_like(Z)
        h = np.zeros((B, H), params.dtype)
        WT = L.W.T
        for t in range(T):
            h = np.tanh(Z[t] + h @ WT)
            hs[t] = h
        below = hs
    return output_probs(params, below)


def predict_batched(params: Params, X) -> np.ndarray:
    """All ``B`` sequences at once (GEMM): per layer ``Z = X U^T + b`` for every step, then the
    recurrence ``h_t = tanh(Z_t + h_{t-1} W^T)``, then ``softmax(h V^T + c)``."""
    params = check_params(params)
    X = _check_X(params, X)
    return _batched_core(params, X)


def _workers(workers, B: int | None = None) -> int:
    if workers is None:
        workers = backend.cpu_count()
    workers = check_positive_int(workers, "workers")
    return min(workers, B) if B is not None else workers


def predict_threads(params: Params, X, *, workers: int | None = None) -> np.ndarray:
    """Shared memory: ``workers`` threads each run :func:`predict_batched` on a slice of the batch
    (BLAS is limited to one thread per worker meanwhile; numpy releases the GIL in BLAS calls)."""
    params = check_params(params)
    X = _check_X(params, X)
    B = X.shape[1]
    workers = _workers(workers, B)
    counts, offsets = split_batch(B, workers)
    Y = np.empty((X.shape[0], B, params.vocab), params.dtype)

    def run(r):
        sl = slice(offsets[r], offsets[r] + counts[r])
        Y[:, sl] = _batched_core(params, np.ascontiguousarray(X[:, sl]))

    from threadpoolctl import threadpool_limits  # noqa: PLC0415

    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(workers) as pool:
        list(pool.map(run, range(workers)))
    return Y


def wavefront_schedule(T: int, L: int) -> list[list[tuple[int, int]]]:
    """The cells ``(l, t)`` of each anti-diagonal ``d = l + t``, ``d = 0 .. T+L-2``.

    Cell ``(l, t)`` needs ``(l-1, t)`` (the layer below) and ``(l, t-1)`` (the step before), both
    on diagonal ``d-1``: every cell of one diagonal can run at the same time. Within a diagonal
    cells are listed by increasing layer ``l``.

    >>> wavefront_schedule(3, 2)
    [[(0, 0)], [(0, 1), (1, 0)], [(0, 2), (1, 1)], [(1, 2)]]
    """
    T = check_positive_int(T, "T")
    L = check_positive_int(L, "L")
    return [[(l, d - l) for l in range(max(0, d - T + 1), min(L - 1, d) + 1)] for d in range(T + L - 1)]


def predict_wavefront(params: Params, X, *, workers: int | None = None) -> np.ndarray:
    """Layer wavefront: the cells of each anti-diagonal of :func:`wavefront_schedule` run
    concurrently on a thread pool (each cell is a ``(B, n) @ (n, H)`` step for the whole batch)."""
    params = check_params(params)
    X = _check_X(params, X)
    T, B, _ = X.shape
    nL = params.n_layers
    workers = _workers(workers, nL)
    hs = [np.empty((T, B, L.W.shape[0]), params.dtype) for L in params.layers]
    zero = [np.zeros((B, L.W.shape[0]), params.dtype) for L in params.layers]

    def cell(lt):
        l, t = lt
        below = X[t] if l == 0 else hs[l - 1][t]
        prev = zero[l] if t == 0 else hs[l][t - 1]
        hs[l][t] = cell_step(params.layers[l], below, prev)

    schedule = wavefront_schedule(T, nL)
    if workers == 1:
        for diagonal in schedule:
            for lt in diagonal:
                cell(lt)
    else:
        from threadpoolctl import threadpool_limits  # noqa: PLC0415

        with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(workers) as pool:
            for diagonal in schedule:
                if len(diagonal) == 1:
                    cell(diagonal[0])
                else:
                    list(pool.map(cell, diagonal))  # a barrier between diagonals
    return output_probs(params, hs[-1])


# --------------------------------------------------------------------------- CUDA
_KERNELS: dict = {}
cuda = None  # numba.cuda, imported on first use (kernels refer to it as a module global)


def _cuda_kernels():
    """Compile (once) the three kernels. Lazy: numba is imported only when CUDA is used."""
    global cuda
    if _KERNELS:
        return _KERNELS
    from numba import cuda  # noqa: PLC0415

    @cuda.jit
    def cell_kernel(x, h_prev, U, W, b, h_out):
        """One thread per (unit i, sequence s): h_out[s, i] = tanh(b_i + W_i . h_prev[s] + U_i . x[s])."""
        i, s = cuda.grid(2)
        if s < h_out.shape[0] and i < h_out.shape[1]:
            acc = b[i]
            for j in range(W.shape[1]):
                acc += W[i, j] * h_prev[s, j]
            for k in range(U.shape[1]):
                acc += U[i, k] * x[s, k]
            h_out[s, i] = math.tanh(acc)

    @cuda.jit
    def logits_kernel(h, V, c, o):
        """One thread per (class v, sequence s): o[s, v] = c_v + V_v . h[s]."""
        v, s = cuda.grid(2)
        if s < o.shape[0] and v < o.shape[1]:
            acc = c[v]
            for j in range(V.shape[1]):
                acc += V[v, j] * h[s, j]
            o[s, v] = acc

    @cuda.jit
    def softmax_kernel(o):
        """One thread per row s, in place and numerically stable: subtract the row max first."""
        s = cuda.grid(1)
        if s < o.shape[0]:
            m = o[s, 0]
            for v in range(1, o.shape[1]):
                m = max(m, o[s, v])
            total = 0.0
            for v in range(o.shape[1]):
                e = math.exp(o[s, v] - m)
                o[s, v] = e
                total += e
            for v in range(o.shape[1]):
                o[s, v] = o[s, v] / total

    _KERNELS.update(cell=cell_kernel, logits=logits_kernel, softmax=softmax_kernel, cuda=cuda)
    return _KERNELS


def predict_cuda(params: Params, X, *, block: tuple[int, int] | None = None, max_simulated: int = 50_000) -> np.ndarray:
    """Batched inference with numba CUDA kernels: one launch per cell ``(l, t)`` over a 2-D grid of
    ``(sequence, unit)`` threads, then logits and a row-wise stable softmax on the device.

    On a GPU this runs for real; in numba's CUDA simulator every thread is a Python thread, so
    ``T * B * (L * H + vocab)`` (the threads launched) is capped at ``max_simulated``.
    ``block = (units, sequences)`` threads per block; by default ``(min(32, max(H, vocab)), min(B, 4))``
    (the simulator runs every thread of a block, in range or not, so small problems get small blocks).
    """
    params = check_params(params)
    X = _check_X(params, X)
    T, B, _ = X.shape
    if backend.cuda_mode() == "unavailable":
        raise RuntimeError("strategy 'cuda': numba was imported before course_lib and there is no GPU; "
                           "restart and import course_lib first")
    if block is None:
        block = (min(32, max(params.nh, params.vocab)), min(B, 4))
    if not (isinstance(block, tuple) and len(block) == 2):
        raise ValueError(f"block: expected a (units, sequences) tuple of two ints, got {block!r}")
    bu, bs = (check_positive_int(v, "block") for v in block)
    if bs * bu > 1024:
        raise ValueError(f"block: expected at most 1024 threads per block, got {bu} x {bs}")
    threads = T * B * (params.n_layers * params.nh + params.vocab)
    if backend.cuda_mode() == "simulator" and threads > max_simulated:
        raise ValueError(
            f"X: in the CUDA simulator this would launch {threads} threads (T*B*(L*H+vocab)); the cap is "
            f"max_simulated={max_simulated}. Use a smaller T, B or model (or a GPU).")
    k = _cuda_kernels()
    dt = params.dtype
    d_layers = [(cuda.to_device(L.U), cuda.to_device(L.W), cuda.to_device(L.b)) for L in params.layers]
    d_V, d_c = cuda.to_device(params.V), cuda.to_device(params.c)
    d_X = cuda.to_device(np.ascontiguousarray(X))
    d_h = [[cuda.to_device(np.zeros((B, L.W.shape[0]), dt)), cuda.device_array((B, L.W.shape[0]), dt)]
           for L in params.layers]
    d_o = cuda.device_array((B, params.vocab), dt)
    Y = np.empty((T, B, params.vocab), dt)

    def grid(n_cols, n_rows):  # x: units (threads of a warp share one sequence), y: sequences
        return (math.ceil(n_cols / bu), math.ceil(n_rows / bs))

    for t in range(T):
        below = d_X[t]
        for l, (dU, dW, db) in enumerate(d_layers):
            prev, out = d_h[l][t % 2], d_h[l][(t + 1) % 2]
            k["cell"][grid(dW.shape[0], B), (bu, bs)](below, prev, dU, dW, db, out)
            below = out
        k["logits"][grid(params.vocab, B), (bu, bs)](below, d_V, d_c, d_o)
        k["softmax"][math.ceil(B / bs), bs](d_o)
        Y[t] = d_o.copy_to_host()
    return Y


# --------------------------------------------------------------------------- scatter / gather
def split_batch(B: int, P: int) -> tuple[list[int], list[int]]:
    """How ``B`` sequences are shared by ``P`` ranks: ``(counts, offsets)``.

    Balanced: every rank gets ``B // P`` sequences and the first ``B % P`` ranks one more; rank
    ``r`` owns sequences ``offsets[r] : offsets[r] + counts[r]``. ``P > B`` is a ValueError (a rank
    would get nothing to do).

    >>> split_batch(7, 3)
    ([3, 2, 2], [0, 3, 5])
    """
    B = check_positive_int(B, "B")
    P = check_positive_int(P, "P")
    if P > B:
        raise ValueError(f"P: expected at most B = {B} ranks (one sequence each at least), got P = {P}")
    base, extra = divmod(B, P)
    counts = [base + (1 if r < extra else 0) for r in range(P)]
    offsets = [int(v) for v in np.concatenate([[0], np.cumsum(counts)[:-1]])]
    return counts, offsets


def scatter_batch(X, P: int) -> list[np.ndarray]:
    """``X (T, B, n)`` -> ``P`` contiguous chunks ``(T, counts[r], n)`` along the batch axis."""
    X = check_array(X, "X", ndim=3)
    counts, offsets = split_batch(X.shape[1], P)
    return [np.ascontiguousarray(X[:, o:o + c]) for c, o in zip(counts, offsets)]


def gather_chunks(chunks) -> np.ndarray:
    """Inverse of :func:`scatter_batch`: concatenate ``(T, b_r, V)`` chunks along the batch axis."""
    if not isinstance(chunks, (list, tuple)) or not chunks:
        raise ValueError(f"chunks: expected a non-empty list of (T, b_r, V) arrays, got {type(chunks).__name__}")
    dims: dict = {}
    for r, ch in enumerate(chunks):
        check_array(ch, f"chunks[{r}]", shape=("T", None, "V"), dims=dims)
    return np.concatenate(chunks, axis=1)


# --------------------------------------------------------------------------- MPI launcher
class MPIFailed(RuntimeError):
    """An ``mpiexec`` run failed or timed out; ``.failed_ranks`` lists the ranks that did not finish."""

    def __init__(self, message: str, failed_ranks=(), log: str = ""):
        super().__init__(message)
        self.failed_ranks = list(failed_ranks)
        self.log = log


@dataclass
class MPIResult:
    """What :func:`run_mpi` read back: probabilities ``(T, B, vocab)`` and per-rank timings (s)."""

    probs: np.ndarray
    P: int
    counts: list
    wall: float                     # seconds for the whole mpiexec launch (process start included)
    times: dict = field(default_factory=dict)  # phase -> per-rank seconds: bcast, scatter, compute, gather

    def phase(self, name: str) -> float:
        """The slowest rank's seconds in a phase (that is what the others wait for)."""
        return float(np.max(self.times[name]))


def run_mpi(params: Params, X, *, P: int = 2, timeout: float = 60.0, counts=None, fail_rank: int | None = None,
            hang_rank: int | None = None, repeat: int = 1) -> MPIResult:
    """Data-parallel inference under ``mpiexec -n P python -m course_lib.parallel.mpi_infer``.

    Rank 0 reads ``params`` and ``X`` from a temporary ``.npz``, broadcasts the parameters,
    scatters the batch (``counts`` per rank, default :func:`split_batch`), every rank runs
    :func:`predict_batched` on its slice, and rank 0 gathers the probabilities and writes them
    back with each rank's phase timings (best of ``repeat`` rounds). A rank that raises writes
    its traceback and aborts the job; the launcher kills ``mpiexec`` after ``timeout`` seconds.
    Either way :class:`MPIFailed` says which ranks failed (and, after a timeout, the phase each
    rank last reached). ``fail_rank`` makes that rank raise, ``hang_rank`` makes it sleep (to see
    both failure paths).
    """
    params = check_params(params)
    X = _check_X(params, X)
    P = check_positive_int(P, "P")
    timeout = check_float(timeout, "timeout", low=0.0, low_inclusive=False)
    repeat = check_positive_int(repeat, "repeat")
    B = X.shape[1]
    if counts is None:
        counts, _ = split_batch(B, P)
    else:
        counts = [check_int(c, "counts", low=1) for c in counts]
        if len(counts) != P or sum(counts) != B:
            raise ValueError(f"counts: expected {P} positive counts summing to B = {B}, got {counts}")
    if fail_rank is not None:
        fail_rank = check_int(fail_rank, "fail_rank", low=0, high=P - 1)
    if hang_rank is not None:
        hang_rank = check_int(hang_rank, "hang_rank", low=0, high=P - 1)
    ok, info = backend.mpi_available()
    if not ok:
        raise MPIFailed(f"MPI is not available: {info}")
    with tempfile.TemporaryDirectory(prefix="course_mpi_") as tmp:
        tmp = Path(tmp)
        np.savez(tmp / "input.npz", X=X, counts=np.asarray(counts), **params.arrays())
        cmd = [info, "-n", str(P), sys.executable, "-m", "course_lib.parallel.mpi_infer", str(tmp),
               "--repeat", str(repeat)]
        if fail_rank is not None:
            cmd += ["--fail-rank", str(fail_rank)]
        if hang_rank is not None:
            cmd += ["--hang-rank", str(hang_rank)]
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                start_new_session=True)
        try:
            log, _ = proc.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            import signal  # noqa: PLC0415

            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:  # pragma: no cover
                pass
            log, _ = proc.communicate()
            timed_out = True
        wall = time.perf_counter() - t0
        errors = {r: (tmp / f"rank{r}.err").read_text() for r in range(P) if (tmp / f"rank{r}.err").exists()}
        done = [r for r in range(P) if (tmp / f"rank{r}.done").exists()]
        if timed_out or proc.returncode != 0 or errors or not (tmp / "output.npz").exists():
            failed = sorted(errors) or [r for r in range(P) if r not in done]
            why = f"timed out after {timeout:g} s" if timed_out else f"exited with code {proc.returncode}"
            lines = [f"mpiexec -n {P} {why}; failed rank(s): {failed}"]
            for r, tb in sorted(errors.items()):
                lines.append(f"rank {r}: {tb.strip().splitlines()[-1]}")
            if timed_out:
                for r in range(P):
                    ph = tmp / f"rank{r}.phase"
                    state = "finished" if r in done else (
                        f"stuck in phase '{ph.read_text()}'" if ph.exists() else "never started")
                    lines.append(f"rank {r}: {state}")
            raise MPIFailed("\n".join(lines), failed, log or "")
        with np.load(tmp / "output.npz") as f:
            probs = f["probs"]
            times = {k: f[k].copy() for k in ("bcast", "scatter", "compute", "gather")}
    return MPIResult(probs, P, list(counts), wall, times)


def predict_mpi(params: Params, X, *, P: int = 2, timeout: float = 60.0) -> np.ndarray:
    """``run_mpi(params, X, P=P, timeout=timeout).probs`` (see :func:`run_mpi`)."""
    return run_mpi(params, X, P=P, timeout=timeout).probs


# --------------------------------------------------------------------------- dispatch
def predict(params: Params, X, *, strategy: str = "serial", **opts) -> np.ndarray:
    """Probabilities ``(T, B, vocab)`` of the stacked softmax RNN for inputs ``X (T, B, nx)``.

    ``strategy`` is one of ``"serial"``, ``"batched"``, ``"threads"`` (``workers=``),
    ``"wavefront"`` (``workers=``), ``"mpi"`` (``P=``, ``timeout=``), ``"cuda"`` (``block=``).
    All strategies agree to float round-off.
    """
    strategy = check_choice(strategy, "strategy", STRATEGIES)
    fn = {"serial": predict_serial, "batched": predict_batched, "threads": predict_threads,
          "wavefront": predict_wavefront, "mpi": predict_mpi, "cuda": predict_cuda}[strategy]
    return fn(params, X, **opts)


# --------------------------------------------------------------------------- models & measurements
def inference_flops(T: int, B: int, nx: int, nh: int, vocab: int, layers: int = 1) -> int:
    """GEMM FLOPs of one inference pass: ``2 T B (H nx + (L-1) H^2 + L H^2 + vocab H)``."""
    return 2 * T * B * (nh * nx + (layers - 1) * nh * nh + layers * nh * nh + vocab * nh)


def work_span(T: int, L: int, P: int | None = None) -> dict:
    """Work/span model of the layer wavefront, in units of one cell ``(l, t)``.

    ``work = T L`` cells; ``span = T + L - 1`` diagonals (the critical path). With ``P`` workers
    and a barrier after each diagonal the schedule takes ``steps = sum_d ceil(|D_d| / P)``; the
    model's speedup is ``work / steps`` (at most ``min(P, L)``: a diagonal has at most ``L`` cells).
    """
    T = check_positive_int(T, "T")
    L = check_positive_int(L, "L")
    out = {"work": T * L, "span": T + L - 1, "parallelism": T * L / (T + L - 1)}
    if P is not None:
        P = check_positive_int(P, "P")
        steps = sum(math.ceil(len(d) / P) for d in wavefront_schedule(T, L))
        out.update(P=P, steps=steps, speedup=T * L / steps)
    return out


def data_parallel_model(B: int, P: int, t_seq: float, t_comm: float = 0.0, t_fixed: float = 0.0) -> dict:
    """Model of batch (data) parallelism: ``P`` workers each run ``ceil(B / P)`` sequences at
    ``t_seq`` s each, plus ``t_comm`` s per sequence moved (scatter + gather) and ``t_fixed`` s of
    start-up. Returns time and speedup over one worker without communication."""
    B = check_positive_int(B, "B")
    P = check_positive_int(P, "P")
    t = math.ceil(B / P) * t_seq + B * t_comm + t_fixed
    return {"B": B, "P": P, "time": t, "speedup": B * t_seq / t}


def measure_strategies(B: int = 32, layers: int = 2, strategies=("serial", "batched"), *, T: int = 32,
                       nh: int = 64, nx: int = 32, vocab: int = 32, seed: int = 0, repeat: int = 3,
                       workers: int | None = None, P: int = 2, blas_threads: int | None = 1) -> dict:
    """Time each strategy on one random problem (the widget's and the speedup plots' data).

    Returns ``{"B", "layers", "T", "nh", "seconds": {name: s}, "seq_per_s": {name: ...},
    "speedup": {name: x over the first strategy}, "max_diff": {name: max |p - p_first|}}``.
    ``mpi`` is timed as the slowest rank's scatter + compute + gather inside one launch (not the
    process start). ``serial`` and ``batched`` run with ``blas_threads`` BLAS threads (default 1:
    one core, the baseline the parallel strategies are compared with; ``None`` leaves BLAS alone);
    ``threads`` and ``wavefront`` always give each worker one BLAS thread.
    """
    B = check_positive_int(B, "B", high=4096)
    layers = check_positive_int(layers, "layers", high=16)
    for s in strategies:
        check_choice(s, "strategies", STRATEGIES)
    if not strategies:
        raise ValueError("strategies: expected at least one strategy name")
    params = init_params(nx, nh, vocab, layers=layers, seed=seed)
    X = np.random.default_rng(seed + 1).standard_normal((T, B, nx)).astype(np.float32)
    seconds, probs = {}, {}
    for s in strategies:
        if s == "mpi":
            res = run_mpi(params, X, P=P, repeat=repeat)
            seconds[s] = res.phase("scatter") + res.phase("compute") + res.phase("gather")
            probs[s] = res.probs
            continue
        opts = {"workers": workers} if s in ("threads", "wavefront") else {}
        limit = blas_threads if s in ("serial", "batched") else None
        from threadpoolctl import threadpool_limits  # noqa: PLC0415

        with threadpool_limits(limits=limit, user_api="blas"):
            probs[s] = predict(params, X, strategy=s, **opts)
            seconds[s] = measure(predict, params, X, strategy=s, repeat=repeat, warmup=0, number=1, **opts).min
    first = strategies[0]
    return {"B": B, "layers": layers, "T": T, "nh": nh, "seconds": seconds,
            "seq_per_s": {s: B / t for s, t in seconds.items()},
            "speedup": {s: seconds[first] / t for s, t in seconds.items()},
            "max_diff": {s: float(np.max(np.abs(probs[s] - probs[first]))) for s in strategies}}
