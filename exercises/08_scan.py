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
# > This file was generated from `solutions/08_scan.ipynb` by `python -m course_lib exercises build`; rebuilding never overwrites your work without `--force` (which keeps a backup).
# > Course version 0.2.0: work in your own copy (`python -m course_lib start`), check it with `python -m course_lib progress`, carry your answers into a new version with `python -m course_lib update`.

# %% [markdown]
# # Worksheet 08 · Linear recurrences in parallel
#
# The recurrence $h_t = a_t \odot h_{t-1} + x_t$ is a chain of affine maps. Composing two of them
# gives another one, so the whole chain can be evaluated as a **scan** -- in pieces, in parallel,
# in any grouping. In this worksheet you write the six pieces the chapter is built from: the
# combine operator, a chunked (reduce → scan → expand) scan, the backward pass as a reverse scan,
# a one-block Blelloch scan as a CUDA kernel, a time-parallel scan that beats the loop, and the
# intra-chunk step of production's chunked layers as matrix products.
#
# Each exercise is a function; run its cell, then the check cell below it.

# %% [markdown] tags=["chapter-header"]
# **Chapter 08 at a glance** · *Generated from `course_lib/teaching/chapter_table.py` and `recordings/` by `python -m course_lib notebooks`: edit those, not this cell.*
#
# After this chapter you can:
#
# 1. Write a linear recurrence as a scan over an associative, non-commutative combine of affine maps, and see why the closed form overflows.
# 2. Compare Hillis-Steele and Blelloch by work and span; write a chunked scan (reduce, scan, expand) and the backward pass as a reverse scan.
# 3. Write a one-block Blelloch scan as a CUDA kernel and a time-parallel scan for SIMD lanes or cores.
# 4. Write the intra-chunk step of production's chunked layers as decay-masked matrix products, and scan across MPI ranks with `Exscan`.
#
# * **Before this chapter:** [02 · BPTT](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/02_bptt.ipynb), [05 · threads & fusion](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/05_threads_fusion.ipynb), [07 · parallel inference](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/07_parallel_inference.ipynb)
# * **Study time:** about 150 min for the lecture and its worksheet (an estimate)
# * **Run time of this worksheet:** measured 7 s on AMD EPYC (zen5-avx512-quiet); its last code cell prints how long it took here
# * **Not in this chapter:** Linear recurrences only: chapters 10 (MGRIT) and 11 (Newton) parallelise non-linear ones over time.
# * **Open this worksheet:** [in Colab](https://colab.research.google.com/github/parallel-rnns/parallel-rnns-course/blob/main/exercises/08_scan.ipynb) · [on Binder](https://mybinder.org/v2/gh/parallel-rnns/parallel-rnns-course/main?urlpath=lab/tree/exercises/08_scan.ipynb) · [download the .ipynb](https://raw.githubusercontent.com/parallel-rnns/parallel-rnns-course/main/exercises/08_scan.ipynb)

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

import course_lib  # first: decides GPU vs CUDA simulator before numba is imported
from numba import cuda, float64, njit

from course_lib.algorithms import scan, scan_cuda
from course_lib.teaching.checks import scan as scan_checks

# %% [markdown]
# ## Exercise 8.1 · The combine operator
#
# Step $t$ is the map $h \mapsto a_t h + b_t$, written as the pair $(a_t, b_t)$. Write
# `combine(p, q)`: the pair of the map "first apply `p = (a1, b1)`, then `q = (a2, b2)`".
# Inputs are numpy arrays of the same shape (element-wise maths). The check also verifies that
# your operator is associative: $(p \circ q) \circ r = p \circ (q \circ r)$.

# %% tags=["solution", "raises-exception", "answer:8.1"]
def combine(p, q):
    """(a1, b1) o (a2, b2): first p, then q. Returns a pair (a, b)."""
    a1, b1 = p
    a2, b2 = q
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 8.1: replace this line with your code")

# %% tags=["raises-exception"]
scan_checks.check_combine(combine)

# %% [markdown]
# ## Exercise 8.2 · A chunked scan: sequential inside, parallel across
#
# Write `chunked_scan(a, x, h0, chunks)` for `a, x` of shape `(T, H)` and `h0` of shape `(H,)`,
# in numpy, in the three phases the parallel version uses:
#
# 1. **reduce**: split the time axis into `chunks` contiguous pieces (sizes may differ by one,
#    e.g. `np.linspace(0, T, chunks + 1).astype(int)` as boundaries); compose each piece's pairs
#    into one pair $(A_c, B_c)$ -- a serial loop per piece, but the pieces are independent;
# 2. **scan the carries**: $h$ just before chunk $c$ is $A_{c-1} h_{\text{before }c-1} + B_{c-1}$,
#    starting from `h0` -- a short serial loop over chunks;
# 3. **expand**: run the recurrence inside each chunk from its carry (independent again).
#
# The check tries even and uneven splits, one chunk, and one chunk per step, checks that `a`, `x`,
# `h0` are left unchanged, and then checks the two properties that make it a *parallel* scan:
#
# * the **work**: it runs your function on a traced `a` and counts how often each $a_t$ is used. A
#   chunked scan uses the steps of every chunk but the last twice (reduce, then expand) -- the extra
#   work that buys a short span; a loop that ignores `chunks` uses each once and fails;
# * the **span**: it runs your function on arrays of traced numbers that remember the longest chain of
#   dependent `+ - * /` behind them, with 4 and with 8 chunks ($T = 64$). The loop's span is $2T$, a
#   chunked scan's about $4T/\text{chunks} + 2\,\text{chunks}$; yours must be at most half the loop's
#   and shrink when `chunks` grows. Finding each chunk's carry by walking the sequence step by step
#   reads every step twice too, but its span is the loop's: it fails. Allocate with the inputs'
#   dtype (`np.empty_like(x)`, `np.ones_like(h0)`) so the traced numbers can be stored.

# %% tags=["solution", "raises-exception", "answer:8.2"]
def chunked_scan(a, x, h0, chunks):
    """h (T, H) with h_t = a_t h_{t-1} + x_t, computed chunk by chunk."""
    T = a.shape[0]
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 8.2: replace this line with your code")

# %% tags=["raises-exception"]
scan_checks.check_chunked_scan(chunked_scan)

# %% [markdown]
# ## Exercise 8.3 · The backward pass is the same scan, run in reverse
#
# With a loss $L$ depending on all $h_t$, let $g_t = \partial L / \partial h_t$ *in total*
# (through all later steps). Then
#
# $$g_t = a_{t+1} \odot g_{t+1} + \frac{\partial L}{\partial h_t}\Big|_{\text{direct}}, \qquad
# \frac{\partial L}{\partial a_t} = h_{t-1} \odot g_t,\quad \frac{\partial L}{\partial x_t} = g_t,\quad
# \frac{\partial L}{\partial h_0} = a_0 \odot g_0$$
#
# with $h_{-1} = h_0$. Write `recurrence_backward(a, h, h0, grad_h)` returning
# `(grad_a, grad_x, grad_h0)`. Use `scan.linear_recurrence` on reversed arrays for the
# $g$ recurrence (any shape `(T, ...)` works; reversed views need `np.ascontiguousarray`).

# %% tags=["solution", "raises-exception", "answer:8.3"]
def recurrence_backward(a, h, h0, grad_h):
    """Gradients through h = linear_recurrence(a, x, h0), given grad_h = dL/dh (direct)."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 8.3: replace this line with your code")

# %% tags=["raises-exception"]
scan_checks.check_backward(recurrence_backward)

# %% [markdown]
# ## Exercise 8.4 · A one-block Blelloch scan in CUDA
#
# Write the kernel `my_scan_kernel(a, x, h0, h)`, launched as `kernel[C, n](...)`: one block per
# channel `c = cuda.blockIdx.x`, one thread per time step `i = cuda.threadIdx.x`, `n =
# cuda.blockDim.x` a power of two; `a, x, h` have shape `(T, C)` with `T = a.shape[0] <= n` (T may
# be odd), `h0` shape `(C,)`.
#
# 1. read `a[i, c]`, `x[i, c]` into local variables (threads with `i >= T` take the identity
#    $(1, 0)$) and store them in the two shared arrays;
# 2. **up-sweep**: for `step = 1, 2, 4, ...`: the thread with `k = (i + 1) * 2 * step - 1 < n`
#    replaces slot `k` by (slot `k - step`) ∘ (slot `k`);
# 3. put the identity $(1, 0)$ in the last slot;
# 4. **down-sweep**: for `step = n/2, ..., 1`: the same `k`; the left slot `k - step` gets the
#    parent (slot `k`), and slot `k` gets parent ∘ (old left);
# 5. slot `i` now holds the composition $(A, B)$ of steps `0..i-1`; threads with `i < T` write
#    `h[i, c] = a_i * (A * h0[c] + B) + x_i` from their local `a_i`, `x_i`.
#
# Threads of a block run concurrently: between a write to shared memory and another thread's read
# of it there must be a `cuda.syncthreads()`. The check runs your kernel in numba's CUDA
# simulator with *traced* shared memory: slots start as NaN, and it reports any read of a slot
# this block has not written and any two threads touching a slot between the same two barriers --
# so a kernel that is right only because the threads happened to run in a lucky order fails.
#
# It also counts, as in GPU-Puzzles, every thread's reads and writes of global memory (the kernel's
# arguments) and of shared memory, and holds the largest count to a budget for a block of `n`
# threads with $L = \log_2 n$ levels: each thread reads `a[i, c]`, `x[i, c]` and `h0[c]` **once**
# and writes `h[i, c]` once; shared reads at most $12L + 4$ and shared writes at most $8L + 4$
# (a few per level: the tree, not a loop over the block). Block sizes 1 to 64, odd `T`, more
# threads than steps, up to three blocks (the simulator runs one Python thread per CUDA thread:
# keep it small).

# %% tags=["solution", "raises-exception", "answer:8.4"]
BLOCK_MAX = scan_cuda.BLOCK_MAX  # shared arrays need a size known at compile time


@cuda.jit
def my_scan_kernel(a, x, h0, h):
    sa = cuda.shared.array(BLOCK_MAX, float64)
    sb = cuda.shared.array(BLOCK_MAX, float64)
    c = cuda.blockIdx.x
    i = cuda.threadIdx.x
    n = cuda.blockDim.x
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 8.4: replace this line with your code")

# %% tags=["raises-exception"]
scan_checks.check_block_kernel(my_scan_kernel)

# %% [markdown]
# ## Exercise 8.5 · A scan that beats the loop (a speed exercise)
#
# With one channel ($H = 1$) the loop $h_t = a_t h_{t-1} + x_t$ is one dependent multiply-add per
# step: the core waits for each result before it can start the next, and most of its arithmetic
# units sit idle. A chunked scan has more work (about twice the loop's) but **independent chains**:
# the chunks' reductions, and later their expansions, do not wait for each other.
#
# Write `fast_scan(a, x, h0, chunks)` (`a, x` of shape `(T, H)`, small `H`; `h0` of shape `(H,)`;
# returns `h` in the dtype of `x`) that splits time into `chunks` pieces and runs several of them
# **side by side**: either interleaved in one loop (four chunks per pass, each carry in its own local
# variable, so the core overlaps four chains) or on threads (`numba.prange` over chunks).
#
# The check, in this order:
#
# 1. the numbers, against the float64 loop (float32 and float64 inputs; uneven splits, `chunks=1`,
#    one chunk per step); `a`, `x`, `h0` must be left unchanged;
# 2. the **span**: it runs the Python body of your function (`fast_scan.py_func`) on arrays of traced
#    numbers that remember the longest chain of dependent `+ - * /` behind them. The loop's span is
#    $2T$; a chunked scan's about $4T/\text{chunks} + 2\,\text{chunks}$. Yours must be at most half
#    the loop's, and shrink when `chunks` grows. So keep the arithmetic in this one function and
#    allocate with the inputs' dtype (`np.empty_like(x)`, `np.empty((C, H), a.dtype)`,
#    `a.dtype.type(1)`);
# 3. **subnormal numbers**: the speed test draws $a_t$ uniform in $[0.5, 1)$ over chunks of 16,384
#    steps. A running product $A_c = a_s \cdots a_t$ of such factors falls below the smallest normal
#    float32 ($1.2 \cdot 10^{-38}$) after about 290 steps, and then -- rounded to nearest -- it never
#    reaches 0: it sticks at the smallest subnormal ($1.4 \cdot 10^{-45}$), and every later multiply
#    works on a subnormal number. The lecture (part 3) measures what that costs on your CPU: CPUs that
#    handle subnormals in microcode (many Intel cores) are many times slower on them, others less so.
#    So **flush**: set a running product to zero once it falls below a small normal threshold -- it is
#    already negligible beside the $B$ terms. Flushing after *every* multiply puts a compare and a
#    select on each chain of multiplies, which can cost more than the side-by-side chunks gain; flush
#    once per block of steps instead: every 64 steps, a product below $10^{-18}$ becomes 0 (64 factors
#    $\ge 0.5$ cannot take it from there below the smallest normal: $10^{-18} \cdot 2^{-64} \approx
#    5 \cdot 10^{-38}$). The check traces your function in float32 on that
#    kind of input ($T = 2048$, 2 chunks) and counts the operations on subnormal numbers: a solution
#    whose products go subnormal **fails on every machine**, with that cause named -- whether or not
#    this CPU would have been slow on it, so the grade is the same on every machine;
# 4. the speed: at $H = 1$, $T = 2^{18}$, float32, with `chunks=16`, at least 0.6 times the speed of
#    the plain compiled loop `scan_checks.sequential_loop` (one multiply-add chain, the carry in a
#    register), measured alongside on a fresh input for every timed call, every result checked. A
#    chunked scan does twice the loop's work, so one chunk at a time runs at about 0.4x of it; only
#    chunks advancing side by side clear the bar. The pass line prints the speed-up you earned. A
#    measured interval wholly above the bar passes; every measurement (at least two) wholly below it
#    fails; measurements that cannot decide (an interval straddling the bar on a busy machine or too
#    close to tell, or threads measured below it while other programs held the cores) are **not
#    judged**: no pass line, the exercise stays open -- run the check again. A busy machine never turns
#    a miss into a pass.
#
# Predict first: how much faster than the course's loop can one core get with four chains at once?

# %% tags=["solution", "raises-exception", "answer:8.5"]
@njit
def fast_scan(a, x, h0, chunks):
    """h (T, H) with h_t = a_t h_{t-1} + x_t: chunks reduced, carried and expanded four at a time."""
    T, H = a.shape
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 8.5: replace this line with your code")


# %% tags=["nbval-ignore-output", "raises-exception"]
scan_checks.check_fast_scan(fast_scan)

# %% [markdown]
# How far from the course's best? `method="chunked"` gives each SIMD lane its own stretch of time
# (module docstring of `course_lib/algorithms/scan.py`). Compare the three on your machine; the
# table's numbers are this run's, a warning line says when the machine was too busy to trust them.

# %% tags=["nbval-ignore-output"]
from course_lib.core import timing

a1, x1, h01 = scan.random_problem(timing.scaled(1 << 20, 1 << 18), 1, seed=3, dtype="float32")
ways = {"sequential": lambda: scan.linear_recurrence(a1, x1, h01, method="sequential"),
        "course_chunked": lambda: scan.linear_recurrence(a1, x1, h01, method="chunked")}
try:
    fast_scan(a1[:8], x1[:8], h01, 2)
    ways["yours"] = lambda: fast_scan(a1, x1, h01, 16)
except NotImplementedError:
    print("fast_scan is not written yet: timing the course's two methods only")
print(timing.compare(repeat=5, **ways))

# %% [markdown]
# ## Exercise 8.6 · The intra-chunk step as matmuls (a speed exercise)
#
# Lecture part 9: production layers run a matrix-state recurrence $S_t = a_t S_{t-1} + k_t v_t^\top$,
# $o_t = S_t^\top q_t$ in chunks. Inside a chunk, from a zero state, the outputs are
#
# $$O_i = \sum_{j \le i} (q_i \cdot k_j)\, e^{G_i - G_j}\, v_j = \big((Q K^\top) \odot L\big) V,
#   \qquad L_{ij} = e^{G_i - G_j} \ (j \le i), \ 0 \text{ above the diagonal},$$
#
# with $G_i = \log a_1 + \dots + \log a_i$ the cumulative log decay. Write `intra_chunk(Q, K, V, G)` for a
# whole stack of chunks at once: `Q, K` of shape `(n, c, d_k)`, `V` `(n, c, d_v)`, `G` `(n, c)`; return
# `(n, c, d_v)` in the dtype of `Q`. Build the mask from *differences* of `G` (in a long chunk `exp(G)`
# alone underflows to 0 and `0 / 0` is NaN), and let matrix products do the sums.
#
# The check proves the numbers (float32/float64, a chunk of one step, a long chunk with strong decay), then
# counts the matrix products that read `Q`, `K` or `V` (at least 2, and the same for any number and length
# of chunks -- no loop over chunks or rows), then times your function against chapter 08's element-wise
# scan computing the same numbers (64 chunks of 64 steps, $d = 64$): at least three times as fast, measured
# alongside.

# %% tags=["solution", "raises-exception", "answer:8.6"]
from course_lib.teaching.checks import chunked as chunked_checks


def intra_chunk(Q, K, V, G):
    """((Q K^T) * L) V for every chunk; L from differences of the cumulative log decays G."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 8.6: replace this line with your code")


# %% tags=["nbval-ignore-output", "raises-exception"]
chunked_checks.check_intra_chunk(intra_chunk)

# %% [markdown]
# ## What you built
#
# * `combine` is all a scan needs: any grouping of the pairs gives the same $h$.
# * The chunked scan does the serial work twice (reduce, then expand) plus a short serial scan of
#   `chunks` carries -- the price of parallelism over time; the course version
#   (`course_lib/algorithms/scan.py`, `_chunked_par`) is the same three phases in numba with `prange`.
# * The backward pass costs one more scan, in reverse.
# * Your kernel is the "block phase" of the seed's GPU scan (`course_lib/algorithms/scan_cuda.py`).
# * `fast_scan` turns the extra work into speed even on one core: independent chains keep the core's
#   arithmetic units busy, where the loop leaves them waiting.
# * `intra_chunk` is the heart of production's chunked form (Mamba-2's SSD, gated linear attention): the
#   recurrence inside a chunk becomes two matrix products and a mask built in log space; the course's
#   version is `course_lib/algorithms/linear_attention.py` (`intra_chunk`, `decay_mask`).

# %% tags=["chapter-footer", "nbval-ignore-output"]
from course_lib.teaching import chapters

chapters.finished()

# %% [markdown] tags=["chapter-footer"]
# Found a problem in this notebook? [Report it](https://github.com/parallel-rnns/parallel-rnns-course/issues/new) (say which cell, and paste what it printed) · how to help: [CONTRIBUTING.md](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/CONTRIBUTING.md)
