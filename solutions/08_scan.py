# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Worksheet 08 · Linear recurrences in parallel
#
# The recurrence $h_t = a_t \odot h_{t-1} + x_t$ is a chain of affine maps. Composing two of them
# gives another one, so the whole chain can be evaluated as a **scan** -- in pieces, in parallel,
# in any grouping. In this worksheet you write the four pieces the chapter is built from: the
# combine operator, a chunked (reduce → scan → expand) scan, the backward pass as a reverse scan,
# and a one-block Blelloch scan as a CUDA kernel.
#
# Each exercise is a function; run its cell, then the check cell below it.

# %%
import numpy as np

import course_lib  # first: decides GPU vs CUDA simulator before numba is imported
from numba import cuda, float64

from course_lib.algorithms import scan, scan_cuda
from course_lib.teaching.checks import scan as scan_checks

# %% [markdown]
# ## Exercise 8.1 · The combine operator
#
# Step $t$ is the map $h \mapsto a_t h + b_t$, written as the pair $(a_t, b_t)$. Write
# `combine(p, q)`: the pair of the map "first apply `p = (a1, b1)`, then `q = (a2, b2)`".
# Inputs are numpy arrays of the same shape (element-wise maths). The check also verifies that
# your operator is associative: $(p \circ q) \circ r = p \circ (q \circ r)$.

# %%
def combine(p, q):
    """(a1, b1) o (a2, b2): first p, then q. Returns a pair (a, b)."""
    a1, b1 = p
    a2, b2 = q
    ### BEGIN SOLUTION
    return a2 * a1, a2 * b1 + b2
    ### END SOLUTION

# %%
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
# The check tries even and uneven splits, one chunk, and one chunk per step.

# %%
def chunked_scan(a, x, h0, chunks):
    """h (T, H) with h_t = a_t h_{t-1} + x_t, computed chunk by chunk."""
    T = a.shape[0]
    ### BEGIN SOLUTION
    bounds = np.linspace(0, T, chunks + 1).round().astype(int)
    pairs = []
    for c in range(chunks):  # reduce (independent chunks)
        A, B = np.ones_like(h0), np.zeros_like(h0)
        for t in range(bounds[c], bounds[c + 1]):
            A, B = combine((A, B), (a[t], x[t]))
        pairs.append((A, B))
    carries = [h0]
    for A, B in pairs[:-1]:  # scan of the carries (serial, short)
        carries.append(A * carries[-1] + B)
    h = np.empty_like(x)
    for c in range(chunks):  # expand (independent chunks)
        prev = carries[c]
        for t in range(bounds[c], bounds[c + 1]):
            prev = a[t] * prev + x[t]
            h[t] = prev
    return h
    ### END SOLUTION

# %%
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

# %%
def recurrence_backward(a, h, h0, grad_h):
    """Gradients through h = linear_recurrence(a, x, h0), given grad_h = dL/dh (direct)."""
    ### BEGIN SOLUTION
    a_next = np.zeros_like(a)
    a_next[:-1] = a[1:]
    g = scan.linear_recurrence(np.ascontiguousarray(a_next[::-1]), np.ascontiguousarray(grad_h[::-1]))[::-1]
    h_prev = np.concatenate([h0[None], h[:-1]], axis=0)
    return h_prev * g, g.copy(), a[0] * g[0]
    ### END SOLUTION

# %%
scan_checks.check_backward(recurrence_backward)

# %% [markdown]
# ## Exercise 8.4 · A one-block Blelloch scan in CUDA
#
# Write the kernel `my_scan_kernel(a, x, h0, h)`, launched as `kernel[C, T](...)`: one block per
# channel `c = cuda.blockIdx.x`, one thread per time step `i = cuda.threadIdx.x`, `T =
# cuda.blockDim.x` a power of two; `a, x, h` have shape `(T, C)`, `h0` shape `(C,)`.
#
# 1. load `(a[i, c], x[i, c])` into the two shared arrays;
# 2. **up-sweep**: for `step = 1, 2, 4, ...`: the thread with `k = (i + 1) * 2 * step - 1 < T`
#    replaces slot `k` by (slot `k - step`) ∘ (slot `k`);
# 3. put the identity $(1, 0)$ in the last slot;
# 4. **down-sweep**: for `step = T/2, ..., 1`: the same `k`; the left slot `k - step` gets the
#    parent (slot `k`), and slot `k` gets parent ∘ (old left);
# 5. slot `i` now holds the composition $(A, B)$ of steps `0..i-1`:
#    `h[i, c] = a[i, c] * (A * h0[c] + B) + x[i, c]`.
#
# Threads of a block run concurrently: between a write to shared memory and another thread's read
# of it there must be a `cuda.syncthreads()`. The check runs your kernel in numba's CUDA
# simulator with *traced* shared memory: slots start as NaN, and it reports any read of a slot
# this block has not written and any two threads touching a slot between the same two barriers --
# so a kernel that is right only because the threads happened to run in a lucky order fails.
# Block sizes 1 to 32 (the simulator runs one Python thread per CUDA thread: keep it small).

# %%
BLOCK_MAX = scan_cuda.BLOCK_MAX  # shared arrays need a size known at compile time


@cuda.jit
def my_scan_kernel(a, x, h0, h):
    sa = cuda.shared.array(BLOCK_MAX, float64)
    sb = cuda.shared.array(BLOCK_MAX, float64)
    c = cuda.blockIdx.x
    i = cuda.threadIdx.x
    n = cuda.blockDim.x
    ### BEGIN SOLUTION
    sa[i] = a[i, c]
    sb[i] = x[i, c]
    cuda.syncthreads()
    step = 1
    while step < n:
        k = (i + 1) * 2 * step - 1
        if k < n:
            left = k - step
            sb[k] = sa[k] * sb[left] + sb[k]
            sa[k] = sa[k] * sa[left]
        step *= 2
        cuda.syncthreads()
    if i == n - 1:
        sa[i] = 1.0
        sb[i] = 0.0
    cuda.syncthreads()
    step = n // 2
    while step >= 1:
        k = (i + 1) * 2 * step - 1
        if k < n:
            left = k - step
            ta = sa[left]
            tb = sb[left]
            sa[left] = sa[k]
            sb[left] = sb[k]
            sb[k] = ta * sb[k] + tb
            sa[k] = ta * sa[k]
        step //= 2
        cuda.syncthreads()
    h[i, c] = a[i, c] * (sa[i] * h0[c] + sb[i]) + x[i, c]
    ### END SOLUTION

# %%
scan_checks.check_block_kernel(my_scan_kernel)

# %% [markdown]
# ## What you built
#
# * `combine` is all a scan needs: any grouping of the pairs gives the same $h$.
# * The chunked scan does the serial work twice (reduce, then expand) plus a short serial scan of
#   `chunks` carries -- the price of parallelism over time; the course version
#   (`course_lib/algorithms/scan.py`, `_chunked_par`) is the same three phases in numba with `prange`.
# * The backward pass costs one more scan, in reverse.
# * Your kernel is the "block phase" of the seed's GPU scan (`course_lib/algorithms/scan_cuda.py`).
