"""The chunked form's fused path (algorithms folder): scalar decay, every chunk above ``-FOLD_LIMIT``, the
element-wise passes fused into :mod:`.linear_attention_kernels` and the products on cache-sized groups of chunks.
:func:`course_lib.algorithms.linear_attention.gated_linear_recurrence` (``method="chunked"``) validates the inputs,
cuts them into chunks and calls :func:`chunked_folded`; its module docstring gives the algebra.

``chunked_folded(Q, K, V, G, S_init, B, heads, n, threads, provider)``   the outputs and final states
``chunked_products_call(Q, K, V, G, BH, n, threads, provider)``         the same products alone, as a callable
``chunks_per_group(c, d_k, d_v, itemsize)``                              chunks per cache-sized group
``split(n, threads)``, ``units(BH, n, threads, min_chunks)``             how the chunks are shared among threads
``on_units(fn, units, threads)``                                         ``fn`` over the units on the threads

Shapes: ``Q, K (m, c, d_k)``, ``V (m, c, d_v)``, ``G (m, c)`` cumulative log decays (float64), ``m = B heads n``
chunks of ``c`` steps. The work is cut in runs of consecutive chunks (:func:`units`), one thread each, every thread
with one BLAS thread. The products go to ``provider``: with numpy's BLAS, where numba can call it, each run is ONE
compiled call (:mod:`.linear_attention_runs`: no return to Python, so no wait for the GIL, between groups); otherwise
a loop here calls the kernels and :func:`course_lib.algorithms.gemm.batch_product` (numpy's BLAS, or oneMKL / BLIS
where the ``[fast]`` extra is installed) group by group.
"""
from __future__ import annotations

import functools
import os

import numpy as np

from ..core import backend
from ..core.forkjoin import Team
from .gemm import batch_product, compiled_gemm
from .linear_attention_kernels import carry_states, fold_outputs, fold_states, folded_buffers, tril_scores
from . import linear_attention_runs as compiled

__all__ = ["MIN_RUN_STEPS", "chunked_folded", "chunked_products_call", "chunks_per_group", "on_units", "run_chunks",
           "split", "units"]

MIN_RUN_STEPS = 1024        # a head is cut in runs of at least this many steps (:func:`run_chunks`)
_GROUP_BYTES = 1 << 20      # the temporaries of one group of chunks, about one L2 (measured best of 64 KB..all)


def split(n: int, threads: int):
    """``threads`` contiguous slices of ``range(n)`` (sizes differ by at most one; empty ones dropped)."""
    edges = np.linspace(0, n, min(threads, n) + 1).round().astype(int)
    return [slice(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def units(BH: int, n: int, threads: int, min_chunks: int = 1) -> list[tuple[int, slice]]:
    """The folded path's work units ``(bh, chunks)``: runs of consecutive chunks of one sequence-head (the ``m`` chunk
    axis is ``(BH, n)``), each head cut in ``ceil(threads / BH)`` runs so that every thread has work -- but never in
    runs shorter than ``min_chunks`` chunks (:func:`run_chunks`)."""
    per = max(1, min(-(-threads // BH), n // min_chunks))
    return [(bh, slice(bh * n + p.start, bh * n + p.stop)) for bh in range(BH) for p in split(n, per)]


def run_chunks(c: int) -> int:
    """The fewest chunks of ``c`` steps worth a run of their own: ``MIN_RUN_STEPS`` steps. (Cutting a head costs two
    hand-offs between threads and phase 1's products; on the 2-core Zen 5 VM a head of 1024 steps ran 1.2x slower on
    2 threads than on 1, and one of 2048 steps ran 1.05-1.3x faster.)"""
    return max(1, -(-MIN_RUN_STEPS // c))


@functools.cache
def _team(threads: int, pid: int) -> Team:
    """The chunked form's threads, made once per process and count (``pid``: a forked child has none of its parent's
    threads). A pool made and joined in every call cost 0.2-0.3 ms, twice a call: more than the whole call on one
    thread at T = 1024 here."""
    return Team(threads)


def on_units(fn, units, threads: int) -> None:
    """``fn(unit)`` for every unit on ``threads`` CPU threads -- the caller takes the first unit
    (:class:`course_lib.core.forkjoin.Team`) -- each with one BLAS thread and the caller's numpy error state (it is
    per thread). No units: nothing runs (phase 1 when every head is one run)."""
    units, err = list(units), np.geterr()

    def run(u):
        with np.errstate(**err):
            fn(u)

    with backend.blas_threads(1):
        if min(threads, len(units)) <= 1:
            for u in units:
                fn(u)
        else:
            _team(min(threads, len(units)), os.getpid()).run(run, units)


def _groups(sl: slice, group: int):
    return (slice(s, min(sl.stop, s + group)) for s in range(sl.start, sl.stop, group))


def _own_states(K, V, G, Kw, dS, mm, products_only=False):
    """One group of chunks: the fused pass ``Kw = K exp(G_c - G)``, then ``dS = Kw^T V`` by ``mm`` (the provider's
    :func:`course_lib.algorithms.gemm.batch_product`; ``products_only``: the product alone, on ``K``)."""
    if products_only:
        Kw = K
    else:
        fold_states(K, G, Kw)
    mm(np.swapaxes(Kw, 1, 2), V, dS)


def _piece_state(K, V, G, agg, sl, group, provider, products_only=False):
    """Phase 1 on the chunks ``sl`` (a piece of a run), a group at a time: the piece's own state carried over its
    chunks into ``agg`` (``(d_k, d_v)``, zeros in). Each group's chunk states are made in cache and dropped, so no
    array of chunk states crosses memory. ``products_only``: the products alone (for :func:`chunked_products`)."""
    g0, (d_k, d_v) = min(group, sl.stop - sl.start), agg.shape
    Kw, dS = np.empty((g0,) + K.shape[1:], K.dtype), np.empty((g0, d_k, d_v), K.dtype)
    gemm = _compiled(provider, K.dtype)
    if gemm is not None:
        compiled.states(gemm, K[sl], V[sl], G[sl], agg, Kw, dS, group, products_only)
        return
    mm, none = batch_product(provider, threads=1), np.empty((0, d_k, d_v), K.dtype)
    for gs in _groups(sl, group):
        g = gs.stop - gs.start
        _own_states(K[gs], V[gs], G[gs], Kw[:g], dS[:g], mm, products_only)
        if not products_only:
            carry_states(G[gs], dS[:g], agg, none)


def _compiled(provider, dtype):
    """numpy's BLAS as numba calls it (:func:`course_lib.algorithms.gemm.compiled_gemm`) where it is the provider and
    can be called so -- a run then goes through :mod:`.linear_attention_runs` in one call -- else None (the Python path
    runs the provider's products)."""
    return compiled_gemm(dtype) if provider == "numpy" else None


def _pieces(units, last, threads: int) -> list[tuple[int, slice]]:
    """Phase 1's work: every run but a head's last (``units[i]`` with ``last[i]`` false), cut in ``threads`` pieces so
    that every thread has a share of it; ``(i, chunks)`` in order."""
    return [(i, slice(sl.start + p.start, sl.start + p.stop)) for i, (_, sl) in enumerate(units) if not last[i]
            for p in split(sl.stop - sl.start, threads)]


def _folded_outputs(Q, K, V, G, S, O, sl, group, provider, products_only=False, seen=None):
    """Phase 3 on the run of chunks ``sl`` entered with state ``S`` (``(d_k, d_v)``, updated in place to the state
    after the run), a group at a time: the group's own chunk states ``dS`` (made in cache), the state scan writing each
    chunk's incoming state into ``R``, the fused pass filling ``P = [Qd | .]``, ``Kd`` (transposed) and
    ``R = [S_in ; V]``, then ``A = Qd Kd`` (into ``P``), the mask, and ``O = [Qd | A] [S_in ; V]``; in one compiled
    call where the provider is numpy's BLAS (:mod:`.linear_attention_runs`). ``products_only``: the products alone, on
    the same shapes (for :func:`chunked_products`). ``seen`` (``(1,)``): :func:`fold_outputs`' finiteness sums of the
    run's ``Q, K, V`` are added to ``seen[0]``."""
    d_k, d_v, g0 = Q.shape[2], V.shape[2], min(group, sl.stop - sl.start)
    buf = folded_buffers(g0, Q.shape[1], d_k, d_v, Q.dtype)
    buf.update(Kw=np.empty((g0,) + K.shape[1:], K.dtype), dS=np.empty((g0, d_k, d_v), K.dtype))
    if products_only:
        for x in buf.values():
            x[:] = 0.5
    gemm = _compiled(provider, Q.dtype)
    if gemm is not None:
        finite = compiled.outputs(gemm, Q[sl], K[sl], V[sl], G[sl], S, O[sl], buf["Kw"], buf["dS"], buf["P"], buf["R"],
                                  buf["Kd"], group, products_only)
        if seen is not None:
            seen[0] += finite
        return
    mm = batch_product(provider, threads=1)
    for gs in _groups(sl, group):
        g = gs.stop - gs.start
        P, R, Kd = buf["P"][:g], buf["R"][:g], buf["Kd"][:g]
        _own_states(K[gs], V[gs], G[gs], buf["Kw"][:g], buf["dS"][:g], mm, products_only)
        if not products_only:
            carry_states(G[gs], buf["dS"][:g], S, R)
            finite = fold_outputs(Q[gs], K[gs], G[gs], V[gs], P, Kd, R)
            if seen is not None:
                seen[0] += finite
        mm(P[:, :, :d_k], Kd, P[:, :, d_k:])
        if not products_only:
            tril_scores(P, d_k)
        mm(P, R, O[gs])


def chunks_per_group(c: int, d_k: int, d_v: int, itemsize: int) -> int:
    """Chunks per cache-sized group (``_GROUP_BYTES`` of temporaries)."""
    return max(1, _GROUP_BYTES // (4 * c * max(c, d_k, d_v) * itemsize))


def chunked_folded(Q, K, V, G, S_init, B, heads, n, threads, provider="numpy"):
    """Scalar decay, every chunk above ``-FOLD_LIMIT``: the fused path. ``Q, K (m, c, d_k)``, ``V (m, c, d_v)``,
    ``G (m, c)`` cumulative; returns ``(O (m, c, d_v), S_last (B * heads, d_k, d_v), finite)``, ``finite``: whether
    every element of ``Q, K, V`` was finite (their fused pass reads each once, :func:`fold_outputs`).

    Three phases over runs of chunks (:func:`units`), a cache-sized group of chunks at a time: (1) the own state of
    every run but a head's last, each such run cut in pieces that all threads share (:func:`_pieces`); (2) the state
    entering each run, carried over the pieces of each head in order (a few per head); (3) each run on one thread:
    every group makes its chunks' own states ``dS`` in cache, the scan inside the run writes each chunk's incoming
    state straight into its product operand, then the outputs. No array of chunk states or incoming states is ever
    made (for one head of d = 128 in chunks of 32 such an array was 2 KB per token, written and read again); the
    price is phase 1's products made twice, on the share of the tokens that is not in a head's last run. Where every
    head is one run (one thread, or as many heads as threads) there are no phases 1 and 2."""
    m, c, d_k = Q.shape
    d_v = V.shape[2]
    BH = B * heads
    runs = units(BH, n, threads, run_chunks(c))
    last = [i == len(runs) - 1 or runs[i + 1][0] != bh for i, (bh, _) in enumerate(runs)]
    O, group = np.empty((m, c, d_v), Q.dtype), chunks_per_group(c, d_k, d_v, Q.dtype.itemsize)
    S_last = S_init.reshape(BH, d_k, d_v).copy()
    S_enter = S_last if len(runs) == BH else np.empty((len(runs), d_k, d_v), Q.dtype)
    if len(runs) > BH:             # a head in several runs: phases 1 and 2 give the state entering each run
        pieces = _pieces(runs, last, threads)
        agg = np.zeros((len(pieces), d_k, d_v), Q.dtype)
        on_units(lambda j: _piece_state(K, V, G, agg[j], pieces[j][1], group, provider), range(len(pieces)), threads)
        of_unit: dict[int, list[int]] = {}
        for j, (i, _) in enumerate(pieces):
            of_unit.setdefault(i, []).append(j)
        none = np.empty((0, d_k, d_v), Q.dtype)
        for i, (bh, _) in enumerate(runs):     # phase 2: carry each head's state over its pieces, in order
            if i == 0 or runs[i - 1][0] != bh:
                S = S_last[bh].copy()
            S_enter[i] = S
            js = of_unit.get(i, [])             # consecutive; a piece's log decay is the sum of its chunks'
            if js:
                Gp = np.array([G[pieces[j][1], -1].sum() for j in js]).reshape(-1, 1)
                carry_states(Gp, agg[js[0]:js[-1] + 1], S, none)
    seen = np.zeros((len(runs), 1), Q.dtype)
    on_units(lambda i: _folded_outputs(Q, K, V, G, S_enter[i], O, runs[i][1], group, provider, seen=seen[i]),
              range(len(runs)), threads)
    for i, (bh, _) in enumerate(runs):
        if last[i]:
            S_last[bh] = S_enter[i]
    return O, S_last, bool(np.isfinite(seen).all())


def chunked_products_call(Q, K, V, G, BH: int, n: int, threads: int, provider: str = "numpy"):
    """A zero-argument callable running only the products :func:`chunked_folded` runs on these chunks (same threads,
    groups and buffer shapes; see :func:`course_lib.algorithms.linear_attention.chunked_products`)."""
    m, c, d_k = Q.shape
    d_v = V.shape[2]
    O, group = np.empty((m, c, d_v), Q.dtype), chunks_per_group(c, d_k, d_v, Q.dtype.itemsize)
    runs = units(BH, n, threads, run_chunks(c))
    S = np.zeros((len(runs), d_k, d_v), Q.dtype)      # the state entering each run (its values do not matter)
    last = [i == len(runs) - 1 or runs[i + 1][0] != bh for i, (bh, _) in enumerate(runs)]
    parts = _pieces(runs, last, threads) if len(runs) > BH else []    # as chunked_folded's phase 1

    def products():
        on_units(lambda j: _piece_state(K, V, G, S[0], parts[j][1], group, provider, products_only=True),
                  range(len(parts)), threads)
        on_units(lambda i: _folded_outputs(Q, K, V, G, S[i], O, runs[i][1], group, provider, products_only=True),
                  range(len(runs)), threads)

    return products
