"""Parallel inference strategies for the stacked softmax RNN (chapter 07, seed 004).

The model -- parameters, the seed's serial loop and the batched forward pass -- is
:mod:`course_lib.models.softmax_rnn`. This module spreads it over threads, MPI ranks and a GPU.
Every method returns the same probabilities ``(T, B, vocab)`` for inputs ``X (T, B, nx)`` (to float
round-off)::

    predict(params, X, method="batched")        # the one entry point; options per method below

================  ===========================================================================
``sequential``    the seed's loop: one sequence, one time step, one layer at a time (GEMV)
``batched``       all sequences together: GEMMs of ``(B, n) @ (n, H)`` (chapter 03)
``threads``       shared memory: ``threads=`` CPU threads split the batch; BLAS releases the GIL
``wavefront``     cells ``(l, t)`` on one anti-diagonal ``l + t = d`` run on ``threads=`` CPU threads
``mpi``           message passing: ``mpiexec -n ranks`` processes get a slice of the batch each
``cuda_batched``  a numba CUDA kernel per cell step, ``block=(units, sequences)`` (a GPU, or numba's simulator)
================  ===========================================================================

Also: :func:`wavefront_schedule` and its work/span model :func:`work_span`; :func:`split_batch`,
:func:`scatter_batch`, :func:`gather_chunks` (how a batch is shared by ranks) and the model of batch
parallelism :func:`data_parallel_model`; :func:`run_mpi` (the MPI method with each rank's phase
times). Nothing here times itself: the measurements are in :mod:`course_lib.experiments.inference`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..core import backend
from ..core.forkjoin import Team
from ..core.mpi import launch
from ..core.validate import check_array, check_choice, check_float, check_int, check_positive_int
from ..models.softmax_rnn import (SoftmaxRNNParams, cell_step_unchecked, batched_core, check_inputs, check_params,
                                  forward, output_probs)
from .mpi_infer import PHASES

__all__ = [
    "METHODS",
    "predict",
    "predict_threads",
    "predict_wavefront",
    "predict_cuda",
    "run_mpi",
    "MPIResult",
    "wavefront_schedule",
    "work_span",
    "split_batch",
    "scatter_batch",
    "gather_chunks",
    "data_parallel_model",
]

METHODS = ("sequential", "batched", "threads", "wavefront", "mpi", "cuda_batched")
MAX_CELLS = 10_000_000  # cells (l, t) a wavefront schedule may list


def _threads(threads, cap: int | None = None) -> int:
    if threads is None:
        threads = backend.cpu_count()
    threads = check_positive_int(threads, "threads")
    return min(threads, cap) if cap is not None else threads


# --------------------------------------------------------------------------- shared memory
def predict_threads(params: SoftmaxRNNParams, X, *, threads: int | None = None) -> np.ndarray:
    """Shared memory: ``threads`` CPU threads (default: all cores) each run the batched forward pass
    on a slice of the batch (BLAS is limited to one thread per worker meanwhile; numpy releases the
    GIL in BLAS calls). More threads than sequences are not started."""
    params = check_params(params)
    X = check_inputs(params, X)
    B = X.shape[1]
    threads = _threads(threads, B)
    counts, offsets = split_batch(B, threads)
    Y = np.empty((X.shape[0], B, params.vocab), params.dtype)

    def run(r):
        sl = slice(offsets[r], offsets[r] + counts[r])
        Y[:, sl] = batched_core(params, np.ascontiguousarray(X[:, sl]))

    with backend.blas_threads(1), Team(threads) as team:  # the caller runs share 0 itself
        team.run(run, range(threads))
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
    if T * L > MAX_CELLS:  # a list of Python tuples: beyond this it would take minutes and all memory
        raise ValueError(f"{'T' if T >= L else 'L'}: too large: the schedule would list T * L = {T * L:.3g} cells; "
                         f"the limit is {MAX_CELLS:,} (work_span counts them in closed form)")
    return [[(l, d - l) for l in range(max(0, d - T + 1), min(L - 1, d) + 1)] for d in range(T + L - 1)]


def predict_wavefront(params: SoftmaxRNNParams, X, *, threads: int | None = None) -> np.ndarray:
    """Layer wavefront: the cells of each anti-diagonal of :func:`wavefront_schedule` run
    concurrently on ``threads`` CPU threads (default: all cores, at most one per layer); each cell
    is a ``(B, n) @ (n, H)`` step for the whole batch, and a barrier separates the diagonals."""
    params = check_params(params)
    X = check_inputs(params, X)
    T, B, _ = X.shape
    nL = params.n_layers
    threads = _threads(threads, nL)
    hs = [np.empty((T, B, L.W.shape[0]), params.dtype) for L in params.layers]
    zero = [np.zeros((B, L.W.shape[0]), params.dtype) for L in params.layers]

    def cell(lt):
        l, t = lt
        below = X[t] if l == 0 else hs[l - 1][t]
        prev = zero[l] if t == 0 else hs[l][t - 1]
        hs[l][t] = cell_step_unchecked(params.layers[l], below, prev)

    schedule = wavefront_schedule(T, nL)
    if threads == 1:
        for diagonal in schedule:
            for lt in diagonal:
                cell(lt)
    else:
        def cells(group):
            for lt in group:
                cell(lt)

        with backend.blas_threads(1), Team(threads) as team:
            for diagonal in schedule:  # the caller takes a share; a barrier between diagonals
                team.run(cells, [diagonal[i::threads] for i in range(min(threads, len(diagonal)))])
    return output_probs(params, hs[-1])


# --------------------------------------------------------------------------- CUDA
_KERNELS: dict = {}
cuda = None  # numba.cuda, imported on first use (kernels refer to it as a module global)


def _cuda_kernels():
    """Compile (once) the three kernels. Lazy: numba is imported only when CUDA is used."""
    global cuda
    if _KERNELS:
        return _KERNELS
    from numba import cuda

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


def predict_cuda(params: SoftmaxRNNParams, X, *, block: tuple[int, int] | None = None,
                 max_simulated: int = 50_000) -> np.ndarray:
    """Batched inference with numba CUDA kernels: one launch per cell ``(l, t)`` over a 2-D grid of
    ``(unit, sequence)`` threads, then logits and a row-wise stable softmax on the device.

    On a GPU this runs for real; in numba's CUDA simulator every thread is a Python thread, so
    ``T * B * (L * H + vocab)`` (the threads launched) is capped at ``max_simulated``.
    ``block = (units, sequences)`` threads per block; by default ``(min(32, max(H, vocab)), min(B, 4))``
    (the simulator runs every thread of a block, in range or not, so small problems get small blocks).
    """
    params = check_params(params)
    X = check_inputs(params, X)
    T, B, _ = X.shape
    max_simulated = check_positive_int(max_simulated, "max_simulated")
    if backend.cuda_mode() == "unavailable":
        raise RuntimeError("method 'cuda_batched': numba was imported before course_lib and there is no GPU; "
                           "restart and import course_lib first")
    if block is None:
        block = (min(32, max(params.nh, params.vocab)), min(B, 4))
    if not (isinstance(block, tuple) and len(block) == 2):
        raise ValueError(f"block: expected a (units, sequences) tuple of two ints, got {block!r}")
    bu, bs = (check_positive_int(v, "block") for v in block)
    if bs * bu > 1024:
        raise ValueError(f"block: expected at most 1024 threads per block, got {bu} x {bs}")
    n_threads = T * B * (params.n_layers * params.nh + params.vocab)
    if backend.cuda_mode() == "simulator" and n_threads > max_simulated:
        raise ValueError(
            f"X: in the CUDA simulator this would launch {n_threads} threads (T*B*(L*H+vocab)); the cap is "
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
def split_batch(batch: int, P: int) -> tuple[list[int], list[int]]:
    """How ``batch`` sequences are shared by ``P`` ranks: ``(counts, offsets)``.

    Balanced: every rank gets ``B // P`` sequences and the first ``B % P`` ranks one more; rank
    ``r`` owns sequences ``offsets[r] : offsets[r] + counts[r]``. ``P > B`` is a ValueError (a rank
    would get nothing to do).

    >>> split_batch(7, 3)
    ([3, 2, 2], [0, 3, 5])
    """
    batch = check_positive_int(batch, "batch")
    P = check_positive_int(P, "P")
    if P > batch:
        raise ValueError(f"P: expected at most B = {batch} ranks (one sequence each at least), got P = {P}")
    base, extra = divmod(batch, P)
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
        check_array(ch, f"chunks[{r}]", shape=("T", None, "V"), dims=dims, min_size={"T": 1, "V": 1})
    return np.concatenate(chunks, axis=1)


# --------------------------------------------------------------------------- message passing


@dataclass
class MPIResult:
    """What :func:`run_mpi` read back: probabilities ``(T, B, vocab)`` and each rank's seconds per phase."""

    probs: np.ndarray
    ranks: int
    counts: list
    wall: float                     # seconds for the whole mpiexec launch (process start included)
    times: dict = field(default_factory=dict)  # phase -> per-rank seconds: bcast, scatter, compute, gather

    def __post_init__(self):
        self.probs = check_array(self.probs, "probs", ndim=3)
        self.ranks = check_positive_int(self.ranks, "ranks")
        if not isinstance(self.counts, (list, tuple)) or len(self.counts) != self.ranks:
            raise TypeError(f"counts: expected a list of {self.ranks} sequence counts, got {self.counts!r:.60}")
        self.wall = check_float(self.wall, "wall", low=0.0)
        if not isinstance(self.times, dict):
            raise TypeError(f"times: expected a dict phase -> per-rank seconds, got {type(self.times).__name__}")

    def phase(self, name: str) -> float:
        """The slowest rank's seconds in a phase (that is what the others wait for)."""
        name = check_choice(name, "name", PHASES)
        return float(np.max(self.times[name]))

    @property
    def in_job(self) -> float:
        """Scatter + compute + gather of the slowest rank: the MPI run without process start-up."""
        return self.phase("scatter") + self.phase("compute") + self.phase("gather")


def run_mpi(params: SoftmaxRNNParams, X, *, ranks: int = 2, timeout: float = 60.0, counts=None,
            fail_rank: int | None = None, hang_rank: int | None = None, repeat: int = 1) -> MPIResult:
    """Data-parallel inference under ``mpiexec -n ranks python -m course_lib.parallel.mpi_infer``
    (launched by :func:`course_lib.core.mpi.launch`).

    Rank 0 reads ``params`` and ``X`` from a temporary ``.npz``, broadcasts the parameters,
    scatters the batch (``counts`` per rank, default :func:`split_batch`), every rank runs the
    batched forward pass on its slice, and rank 0 gathers the probabilities and writes them back
    with each rank's phase times (the fastest of ``repeat`` rounds: ``repeat=1`` computes once).
    A rank that raises aborts the job; after ``timeout`` seconds the job is killed. Either way
    :class:`course_lib.core.mpi.MPIFailed` names the failing rank(s) and the phase every rank
    reached. ``fail_rank`` makes that rank raise, ``hang_rank`` makes it sleep (to see both failure paths).
    """
    params = check_params(params)
    X = check_inputs(params, X)
    ranks = check_positive_int(ranks, "ranks", high=256)
    timeout = check_float(timeout, "timeout", low=0.0, high=86400.0, low_inclusive=False)
    repeat = check_positive_int(repeat, "repeat", high=1000)
    B = X.shape[1]
    if counts is None:
        counts, _ = split_batch(B, ranks)
    else:
        if isinstance(counts, (str, bytes)) or not hasattr(counts, "__iter__"):
            raise TypeError(f"counts: expected a list of {ranks} sequence counts, got {type(counts).__name__} {counts!r}")
        counts = [check_int(c, "counts", low=1) for c in counts]
        if len(counts) != ranks or sum(counts) != B:
            raise ValueError(f"counts: expected {ranks} positive counts summing to B = {B}, got {counts}")
    args = ["--repeat", str(repeat)]
    if fail_rank is not None:
        args += ["--fail-rank", str(check_int(fail_rank, "fail_rank", low=0, high=ranks - 1))]
    if hang_rank is not None:
        args += ["--hang-rank", str(check_int(hang_rank, "hang_rank", low=0, high=ranks - 1))]

    def prepare(work):
        np.savez(work / "input.npz", X=X, counts=np.asarray(counts), **dict(zip(params.names(), params.arrays())))

    def collect(work):
        with np.load(work / "output.npz") as f:
            return f["probs"].copy(), {k: f[k].copy() for k in PHASES}

    (probs, times), run = launch("course_lib.parallel.mpi_infer", ranks=ranks, prepare=prepare, collect=collect,
                                 args=args, timeout=timeout)
    return MPIResult(probs, ranks, list(counts), run.wall, times)


# --------------------------------------------------------------------------- dispatch
def predict(params: SoftmaxRNNParams, X, *, method: str = "batched", **opts) -> np.ndarray:
    """Probabilities ``(T, B, vocab)`` of the stacked softmax RNN for inputs ``X (T, B, nx)``.

    ``method`` is one of ``"sequential"``, ``"batched"`` (:func:`course_lib.models.softmax_rnn.forward`),
    ``"threads"`` (``threads=``), ``"wavefront"`` (``threads=``), ``"mpi"`` (``ranks=``, ``timeout=``),
    ``"cuda_batched"`` (``block=``). All methods agree to float round-off.
    """
    method = check_choice(method, "method", METHODS)
    if method in ("sequential", "batched"):
        if opts:
            raise TypeError(f"method {method!r} takes no options, got {sorted(opts)}")
        return forward(params, X, method=method)
    if method == "mpi":
        return run_mpi(params, X, **opts).probs
    fn = {"threads": predict_threads, "wavefront": predict_wavefront, "cuda_batched": predict_cuda}[method]
    return fn(params, X, **opts)


# --------------------------------------------------------------------------- models (no timing)
def work_span(T: int, L: int, P: int | None = None) -> dict:
    """Work/span model of the layer wavefront, in units of one cell ``(l, t)``.

    ``work = T L`` cells; ``span = T + L - 1`` diagonals (the critical path). With ``P`` workers
    and a barrier after each diagonal the schedule takes ``steps = sum_d ceil(|D_d| / P)``; the
    model's speedup is ``work / steps`` (at most ``min(P, L)``: a diagonal has at most ``L`` cells).
    It assumes every cell costs the same and a barrier costs nothing.
    """
    T = check_positive_int(T, "T")
    L = check_positive_int(L, "L")
    out = {"work": T * L, "span": T + L - 1, "parallelism": T * L / (T + L - 1)}
    if P is not None:
        P = check_positive_int(P, "P")
        steps = _wavefront_steps(T, L, P)
        out.update(P=P, steps=steps, speedup=T * L / steps)
    return out


def _wavefront_steps(T: int, L: int, P: int) -> int:
    """``sum_d ceil(|D_d| / P)`` in closed form: the diagonals hold 1, 2, .., a-1 cells, then ``a = min(T, L)``
    cells ``|T - L| + 1`` times, then a-1, .., 1 (so any T and L count at once)."""
    a, b = min(T, L), max(T, L)

    def rising(n):  # sum_{k=1..n} ceil(k / P), with n = q P + r
        q, r = divmod(n, P)
        return P * q * (q + 1) // 2 + r * (q + 1)

    return 2 * rising(a - 1) + (b - a + 1) * (-(-a // P))


def data_parallel_model(batch: int, P: int, t_seq: float, t_comm: float = 0.0, t_fixed: float = 0.0) -> dict:
    """Model of batch (data) parallelism: ``P`` workers each run ``ceil(B / P)`` sequences at
    ``t_seq`` s each, plus ``t_comm`` s per sequence moved (scatter + gather) and ``t_fixed`` s of
    start-up. Returns time and speedup over one worker without communication."""
    batch = check_positive_int(batch, "batch")
    P = check_positive_int(P, "P")
    t_seq = check_float(t_seq, "t_seq", low=0.0, low_inclusive=False)
    t_comm = check_float(t_comm, "t_comm", low=0.0)
    t_fixed = check_float(t_fixed, "t_fixed", low=0.0)
    t = math.ceil(batch / P) * t_seq + batch * t_comm + t_fixed
    return {"B": batch, "P": P, "time": t, "speedup": batch * t_seq / t}
