"""Check for worksheet 08, exercise 8.6: the intra-chunk step of the chunked form as matrix products.

``intra_chunk(Q, K, V, G) -> O``: ``Q, K (n, c, d_k)``, ``V (n, c, d_v)`` are ``n`` chunks of ``c`` steps,
``G (n, c)`` the cumulative log decays inside each chunk (``G_i = log a_1 + ... + log a_i``); the answer is
``O_i = sum_{j <= i} (q_i . k_j) exp(G_i - G_j) v_j`` -- the outputs each chunk produces from a zero state,
``((Q K^T) * L) V`` with the decay mask ``L`` built in log space.

The check proves, in order:

1. the numbers, against :func:`course_lib.algorithms.linear_attention.intra_chunk` on small cases (float32
   and float64, one step, a chunk of one, and a long chunk with strong decay, where ``exp(G_i) / exp(G_j)``
   is ``0 / 0``);
2. that it calls matrix products -- counted: ``Q``, ``K`` and ``V`` are wrapped so that every product that
   reads them is logged (:func:`course_lib.teaching.checks.core.count_products`); between 2 and
   :data:`MAX_PRODUCTS` products for a whole stack of chunks, whatever ``n`` and ``c``;
3. the speed: at ``n = 64`` chunks of ``c = 64`` steps, ``d = 64``, float32, at least :data:`MIN_SPEEDUP` times as
   fast as chapter 08's element-wise scan computing the same numbers
   (``gated_linear_recurrence(method="scan")`` with the chunks as the batch), measured alongside by
   :func:`.speed.judge_speed`: a fresh stack of chunks for every timed call, every timed result compared, a
   miss beyond the measured spread fails even on a busy machine.
"""
from __future__ import annotations

import numpy as np

from ...algorithms import linear_attention as la
from .shortcuts import check_no_shortcut
from .core import Case, ExerciseFailed, check_function, count_products, counted
from .speed import judge_speed

__all__ = ["check_intra_chunk", "MIN_SPEEDUP", "MAX_PRODUCTS", "scan_reference"]

MIN_SPEEDUP = 3.0   # vs the element-wise scan on the same tokens (the goal), same run
MAX_PRODUCTS = 4    # a whole stack of chunks: Q K^T and (A * L) V, perhaps a transpose product more
_HINT = ("A = Q @ K.transpose(0, 2, 1) gives every (q_i . k_j) at once; the mask is "
         "exp(G[:, :, None] - G[:, None, :]) below the diagonal and 0 above (np.tril, or np.where with -inf "
         "before exp); then (A * L) @ V. Never exp(G) alone: it underflows in a long chunk.")


def _cases():
    out = []
    for i, (n, c, dk, dv, lo, hi, dt) in enumerate([(3, 5, 4, 3, 0.5, 1.0, "float64"), (2, 1, 3, 2, 0.9, 1.0, "float64"),
                                                    (4, 16, 8, 8, 0.8, 1.0, "float32"), (1, 1, 1, 1, 0.5, 0.5, "float32"),
                                                    (2, 300, 4, 3, 0.01, 0.05, "float64")]):
        q, k, v, d = la.random_problem(c, n, 1, dk, dv, low=lo, high=hi, seed=860 + i, dtype=dt)
        Q, K, V = (np.ascontiguousarray(x[:, :, 0].transpose(1, 0, 2)) for x in (q, k, v))
        G = np.cumsum(np.log(d[:, :, 0].T.astype(np.float64)), axis=1)
        out.append(Case(dict(Q=Q, K=K, V=V, G=G), label=f"n={n} chunks of c={c}, d_k={dk}, d_v={dv}, decay in "
                                                         f"[{lo}, {hi}], {dt}"))
    return out


def _reference(Q, K, V, G):
    return la.intra_chunk(Q, K, V, G)


def scan_reference(Q, K, V, G):
    """The same numbers by chapter 08's element-wise scan: each chunk is one sequence of the batch, run from a
    zero state over the flattened ``d_k x d_v`` state."""
    a = np.exp(np.diff(np.concatenate([np.zeros((G.shape[0], 1)), G], axis=1), axis=1)).T.astype(Q.dtype)
    tm = lambda x: np.ascontiguousarray(x.transpose(1, 0, 2)[:, :, None])  # noqa: E731  (c, n, 1, d)
    o = la.gated_linear_recurrence(tm(Q), tm(K), tm(V), np.ascontiguousarray(a[:, :, None]), method="scan")
    return o[:, :, 0].transpose(1, 0, 2)


def check_intra_chunk(student, *, min_speedup: float = MIN_SPEEDUP, retries: int = 2) -> str:
    """Exercise 8.6 (module docstring): numbers, counted matrix products, speed against the element-wise scan.

    Property: the mask from differences of G, and the sums as matrix products. A long chunk with strong decay
    (exp(G) alone underflows: 0/0 is NaN) and a chunk of one step; the products reading Q, K, V counted for
    2 chunks of 8 and 6 of 32 (fewer than 2, or a count that grows, is named); the course's intra_chunk is a
    shortcut; the speed-up over the element-wise scan must lie wholly above :data:`MIN_SPEEDUP`."""
    ex = "8.6"
    line = check_function(ex, student, _reference, _cases(), output_names=["O"], rtol=1e-4, atol=1e-5, quiet=True,
                          inputs_unchanged=True, time_axis=None, hint=_HINT)
    counts = []
    for n, c in ((2, 8), (6, 32)):
        q, k, v, d = la.random_problem(c, n, 1, 8, 8, seed=7)
        Q, K, V = (counted(np.ascontiguousarray(x[:, :, 0].transpose(1, 0, 2))) for x in (q, k, v))
        G = np.cumsum(np.log(d[:, :, 0].T.astype(np.float64)), axis=1)
        counts.append(count_products(student, Q, K, V, G)[0])
    if max(counts) < 2:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  your numbers are right, but your function computed them with "
            f"{max(counts)} matrix product(s) reading Q, K or V -- element-wise, not on the matrix units.\n  Hint: " + _HINT)
    if max(counts) > MAX_PRODUCTS or counts[0] != counts[1]:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  your numbers are right, but your function called {counts[0]} matrix products "
            f"for 2 chunks of 8 steps and {counts[1]} for 6 chunks of 32: the count must not grow with the chunks "
            f"or their length (at most {MAX_PRODUCTS}: one product over the whole stack does all chunks).\n  "
            "Hint: np.matmul / @ on (n, c, d) arrays multiplies every chunk at once; no Python loop over chunks or rows.")
    # the course's answer, and its decay mask: building the mask from differences is the numerics taught here
    check_no_shortcut(ex, student, {"linear_attention.intra_chunk": la.intra_chunk,
                                    "linear_attention.decay_mask": la.decay_mask}, **_cases()[0].kwargs)
    # speed: against the element-wise scan computing the same numbers, measured alongside; a fresh stack of
    # chunks for every timed call, every timed result compared with the reference
    def make_input(rng):
        q, k, v, d = la.random_problem(64, 64, 1, 64, 64, low=0.9, high=1.0, seed=int(rng.integers(1 << 30)))
        Q, K, V = (np.ascontiguousarray(x[:, :, 0].transpose(1, 0, 2)) for x in (q, k, v))
        return {"Q": Q, "K": K, "V": V, "G": np.cumsum(np.log(d[:, :, 0].T.astype(np.float64)), axis=1)}

    judged = judge_speed(ex, student, _reference, scan_reference, make_input, min_speedup=min_speedup,
                         baseline_name="course_scan", baseline_desc="the element-wise scan on the same tokens", rtol=1e-4,
                         atol=1e-5, retries=retries, repeat=3, budget_s=0.3, seed=86,
                         label="64 chunks of 64 steps, d = 64, float32",
                         context=f"your intra-chunk step is right and uses {counts[0]} matrix products",
                         hint="keep everything float32 (cast the mask), build the mask once for the whole stack, and let "
                              "np.matmul do the sums.")
    print(line)
    print(f"  {counts[0]} matrix products for a whole stack of chunks, whatever their number and length")
    print(f"  speed: {judged.earned}")
    return line
