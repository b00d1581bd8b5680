# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# > **Your worksheet.** Replace each `raise NotImplementedError(...)` with your code, then run the check cell below it: it says *exactly* what is wrong, or prints `Exercise N.k passed`.
# > This file was generated from `solutions/07_parallel_inference.ipynb` by `python -m course_lib exercises build`; rebuilding never overwrites your work without `--force` (which keeps a backup).
# > Course version 0.2.0: work in your own copy (`python -m course_lib start`), check it with `python -m course_lib progress`, carry your answers into a new version with `python -m course_lib update`.

# %% [markdown]
# # Worksheet 07 · Parallel inference
#
# You will write the pieces of the chapter's parallel inference engine: the layer-wavefront
# schedule, a numerically stable softmax, batched softmax inference for a stacked RNN, and the
# scatter/gather that shares a batch between $P$ MPI ranks. Each check compares your function
# with the course's own (`course_lib.models.softmax_rnn` and `course_lib.parallel.inference`) on
# several seeded cases and says exactly what differs.

# %% [markdown] tags=["chapter-header"]
# **Chapter 07 at a glance** · *Generated from `course_lib/teaching/chapter_table.py` and `recordings/` by `python -m course_lib notebooks`: edit those, not this cell.*
#
# After this chapter you can:
#
# 1. Find the dependencies of a stacked softmax RNN and schedule its layers as a wavefront (critical path $T + L - 1$ instead of $TL$).
# 2. Write numerically stable, batched softmax inference.
# 3. Share a batch among $P$ MPI ranks and gather the results; measure what shared memory and message passing each cost here.
# 4. Run the inference cell as a CUDA kernel (on a GPU, or in numba's simulator).
#
# * **Before this chapter:** [03 · batching](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/03_batching.ipynb), [05 · threads & fusion](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/05_threads_fusion.ipynb)
# * **Study time:** about 105 min for the lecture and its worksheet (an estimate)
# * **Run time of this worksheet:** measured 2 s on AMD EPYC (zen5-avx512-quiet); its last code cell prints how long it took here
# * **Not in this chapter:** The time axis stays serial: chapter 08 parallelises it for linear recurrences.
# * **Open this worksheet:** [in Colab](https://colab.research.google.com/github/parallel-rnns/parallel-rnns-course/blob/main/exercises/07_parallel_inference.ipynb) · [on Binder](https://mybinder.org/v2/gh/parallel-rnns/parallel-rnns-course/main?urlpath=lab/tree/exercises/07_parallel_inference.ipynb) · [download the .ipynb](https://raw.githubusercontent.com/parallel-rnns/parallel-rnns-course/main/exercises/07_parallel_inference.ipynb)

# %% tags=["colab-setup", "nbval-ignore-output"]
# Generated (course_lib/teaching/chapters.py): where course_lib is missing (Colab, a bare kernel), install
# the course into this kernel; where it is installed, print one line. Either way, start this notebook's clock.
try:
    from course_lib.teaching import chapters
except ModuleNotFoundError:
    import importlib
    import subprocess
    import sys

    print("course_lib is not installed in this kernel: installing the course with pip (a few minutes) ...")
    source = "parallel-rnns-course @ git+https://github.com/parallel-rnns/parallel-rnns-course.git@main"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", source], check=True)
    importlib.invalidate_caches()
    from course_lib.teaching import chapters
chapters.started()

# %%
import numpy as np

import course_lib
from course_lib.models import softmax_rnn
from course_lib.parallel import inference
from course_lib.teaching.checks import parallel_inference as parallel_inference_checks

# %% [markdown]
# ## Exercise 7.1 · The wavefront schedule
#
# In a stacked RNN, cell $(l, t)$ (layer $l$, time step $t$) needs the cell below, $(l-1, t)$, and
# the cell before, $(l, t-1)$. Both lie on the anti-diagonal $d - 1$ if $(l, t)$ lies on
# $d = l + t$, so all cells of one anti-diagonal can run at the same time.
#
# Write `wavefront_schedule(T, L)`: a list of the $T + L - 1$ diagonals $d = 0, 1, \dots$, each a
# list of the `(l, t)` pairs with $l + t = d$, $0 \le l < L$, $0 \le t < T$ (any order inside a
# diagonal).

# %% tags=["solution", "raises-exception", "answer:7.1"]
def wavefront_schedule(T, L):
    """[[(l, t), ...] for d in range(T + L - 1)] with l + t == d."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 7.1: replace this line with your code")

# %% tags=["raises-exception"]
parallel_inference_checks.check_wavefront_schedule(wavefront_schedule)

# %% [markdown]
# How much shorter is the critical path? (This cell uses the course's own schedule, so it runs
# before you solve the exercise.)

# %%
for T, L in [(32, 1), (32, 2), (32, 8), (8, 8)]:
    steps = len(inference.wavefront_schedule(T, L))
    print(f"T={T:>2}, L={L}: {T * L:>3} cells in {steps:>2} wavefront steps -> at most {T * L / steps:.2f}x")

# %% [markdown]
# ## Exercise 7.2 · A numerically stable softmax
#
# $\mathrm{softmax}(o)_v = e^{o_v} / \sum_u e^{o_u}$ along the **last** axis. Computed literally,
# $e^{1000}$ overflows to `inf` and the result is `nan`. Since $\mathrm{softmax}(o - m) =
# \mathrm{softmax}(o)$ for any constant $m$, subtract each row's maximum first: the largest
# exponent becomes $e^0 = 1$ and nothing overflows. Write `softmax(o)` for arrays of any
# number of dimensions.

# %% tags=["solution", "raises-exception", "answer:7.2"]
def softmax(o):
    """Stable softmax along the last axis; same shape as o."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 7.2: replace this line with your code")

# %% tags=["raises-exception"]
parallel_inference_checks.check_softmax(softmax)

# %% [markdown]
# ## Exercise 7.3 · Batched softmax inference
#
# The seed's forward pass, for a stacked network and a whole batch at once. With a batch of row
# vectors (`X[t]` is `(B, nx)`) the column-vector formulas $a = b + W h + U x$ become
# `a = x @ U.T + h @ W.T + b`. Write `batched_predict(params, X)`:
#
# * `params.layers[l].U (H, n_in)`, `.W (H, H)`, `.b (H,)`; `params.V (vocab, H)`, `params.c (vocab,)`;
# * every layer starts from $h = 0$; layer 0 reads `X[t]`, layer $l$ reads layer $l-1$'s state at step $t$;
# * return `softmax(h_top @ V.T + c)` for every step: shape `(T, B, vocab)`.
#
# You may use your `softmax` from 7.2. This is also a **speed exercise**: the point of batching is
# that one matrix product per layer and step serves all $B$ sequences. After the numbers, the check
# *counts* the matrix products your function makes with `U`, `W` and `V` (they must not grow with
# $B$, and grow only linearly with $T$), then times your function against the course's serial loop
# (one sequence at a time, matrix-vector products) in the same run: it must be at least
# `parallel_inference_checks.MIN_SPEEDUP` times faster on your machine. Do not change `params` or
# `X` in place.

# %% tags=["solution", "raises-exception", "answer:7.3"]
def batched_predict(params, X):
    """X (T, B, nx) -> probabilities (T, B, vocab)."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 7.3: replace this line with your code")

# %% tags=["nbval-ignore-output", "raises-exception"]
parallel_inference_checks.check_batched_predict(batched_predict)

# %% [markdown]
# ## Exercise 7.4 · Sharing a batch between P ranks
#
# With MPI, rank 0 *scatters* the batch: rank $r$ receives `counts[r]` sequences starting at
# `offsets[r]` (that is exactly what `comm.Scatterv` needs). The split must be balanced -- the
# slowest rank sets the pace -- so every rank gets $\lfloor B/P \rfloor$ sequences and the first
# $B \bmod P$ ranks one more. With more ranks than sequences some rank would idle: raise a
# `ValueError`. Write `split_batch(batch, P)` returning `(counts, offsets)` as two lists.

# %% tags=["solution", "raises-exception", "answer:7.4"]
def split_batch(batch, P):
    """(counts, offsets): rank r owns sequences offsets[r] : offsets[r] + counts[r]."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 7.4: replace this line with your code")

# %% tags=["raises-exception"]
parallel_inference_checks.check_split_batch(split_batch)

# %% [markdown]
# ## Exercise 7.5 · Gathering the results
#
# Each rank returns its probabilities `(T, counts[r], vocab)`; rank 0 *gathers* them, in rank
# order, back into `(T, B, vocab)`. Write `gather_chunks(chunks)`.

# %% tags=["solution", "raises-exception", "answer:7.5"]
def gather_chunks(chunks):
    """list of (T, b_r, V) arrays, rank order -> (T, sum b_r, V)."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 7.5: replace this line with your code")

# %% tags=["raises-exception"]
parallel_inference_checks.check_gather_chunks(gather_chunks)

# %% [markdown]
# ## Putting it together: data parallelism, simulated and real
#
# Scatter with your split, run your batched inference on each slice ("rank"), gather, and compare
# with the course's serial loop. Ranks never talk to each other during the compute: the result
# must be identical.

# %% tags=["raises-exception"]
def data_parallel_predict(params, X, P):
    counts, offsets = split_batch(X.shape[1], P)
    chunks = [batched_predict(params, X[:, o:o + c]) for c, o in zip(counts, offsets)]
    return gather_chunks(chunks)


def check_data_parallel():
    params = softmax_rnn.init_params(5, 7, 6, layers=2, seed=1, dtype=np.float64)
    X = np.random.default_rng(2).standard_normal((6, 10, 5))
    ref = softmax_rnn.forward(params, X, method="sequential")
    for P in (1, 3, 10):
        err = float(np.max(np.abs(data_parallel_predict(params, X, P) - ref)))
        print(f"P={P:>2}: max |p - p_serial| < 1e-12: {err < 1e-12}")


check_data_parallel()

# %% [markdown]
# With MPI installed, the same split drives a real job: `mpiexec -n 2` ranks receive the counts
# *your* `split_batch` returns (through `Scatterv`), run batched inference and gather the results,
# which are compared with serial inference. Without MPI the cell says so.

# %% tags=["nbval-ignore-output", "check", "raises-exception"]
parallel_inference_checks.run_split_under_mpi(split_batch, batch=7, P=2)

# %% tags=["chapter-footer", "nbval-ignore-output"]
from course_lib.teaching import chapters

chapters.finished()

# %% [markdown] tags=["chapter-footer"]
# Found a problem in this notebook? [Report it](https://github.com/parallel-rnns/parallel-rnns-course/issues/new) (say which cell, and paste what it printed) · how to help: [CONTRIBUTING.md](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/CONTRIBUTING.md)
