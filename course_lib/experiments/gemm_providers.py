"""The GEMM providers measured at the course's shapes (experiments layer; chapter 09 and the benchmarks).

:mod:`course_lib.algorithms.gemm` computes one product with numpy's BLAS, oneMKL or BLIS; this module asks
which is fastest *at the shapes the course multiplies*, and what that means for an LSTM pass:

``lstm_products(batch, nh, nx, T, backward)``   the products of one LSTM pass (``workspace`` method): each
                                           ``{"name", "M", "K", "N", "ta", "tb", "calls"}`` -- ``calls`` per pass
``course_products(batch, nh, nx, T)``            those of a training pass, the chunked form's (chapter 08: 64 x 64
                                           tiles) and two squares (1000, 4000)
``rates(products, providers, repeat)``      each product on every provider, timed interleaved: GFLOP/s (best,
                                           median) and the speed-up over numpy with its 95% interval
``pass_floor_ms(products, rates, T)``       per provider: the pass's products alone, each at the best rate that
                                           provider reached at its shape, in ms per time step -- what no pass
                                           whose products go through that library can beat
``lstm_on_providers(batch, nh, nx, T, ...)``     the same LSTM pass on every provider, beside the per-gate loop:
                                           does the library or the algorithm buy more here?
``recorded_gains(folder)``                  what the providers bought on machines that recorded
                                           ``benchmarks/lstm.py --record`` (read back, never measured here)

All timings are :func:`course_lib.core.timing.compare` runs (interleaved rounds, noise-judged).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..algorithms import gemm
from ..core.counting import gemm_flops
from ..core.timing import compare
from ..core.validate import check_bool, check_positive_int, check_repeat
from . import lstm as lstm_experiments

__all__ = ["lstm_products", "course_products", "operands", "rates", "pass_floor_ms", "lstm_on_providers",
           "recorded_gains"]


def _product(name, M, K, N, ta=False, tb=False, calls=1) -> dict:
    return {"name": name, "M": M, "K": K, "N": N, "ta": ta, "tb": tb, "calls": calls}


def lstm_products(batch: int, nh: int, nx: int, T: int, backward: bool = True) -> list[dict]:
    """The GEMMs of one ``workspace`` pass over ``X (T, B, nx)`` with ``H = nh`` hidden units (gates 4H),
    ``B = batch``: forward: the input projection of all T steps, and T recurrent products; backward adds T
    recurrent products and three GEMMs over all steps (the weight gradients, the input gradient)."""
    B, H, nx, T = (check_positive_int(v, n) for v, n in ((batch, "batch"), (nh, "nh"), (nx, "nx"), (T, "T")))
    out = [_product("input projection X W_ih^T", T * B, nx, 4 * H, tb=True),
           _product("recurrent step h W_hh^T", B, H, 4 * H, tb=True, calls=T)]
    if check_bool(backward, "backward"):
        out += [_product("backward step dZ W_hh", B, 4 * H, H, calls=T),
                _product("weight gradient dZ^T X", 4 * H, T * B, nx, ta=True),
                _product("weight gradient dZ^T H", 4 * H, T * B, H, ta=True),
                _product("input gradient dZ W_ih", T * B, 4 * H, nx)]
    return out


def course_products(batch: int = 64, nh: int = 512, nx: int = 512, T: int = 100, *,
                    squares=(1000, 4000)) -> list[dict]:
    """A training pass's products at ``(batch, nh, nx, T)``, the chunked form's 64 x 64 tiles (chapter 08) and
    square products of each size in ``squares``."""
    out = lstm_products(batch, nh, nx, T, backward=True)
    out.append(_product("chunked form Q_c K_c^T (chunk 64)", 64, 64, 64, tb=True))
    out += [_product(f"square {n}", n, n, n) for n in squares]
    return out


def operands(p: dict, dtype="float32", seed: int = 0):
    """``(A, B, out)`` for one product: random operands (a transposed operand is the ``.T`` view of a
    C-contiguous array, as the LSTM passes it) and a C-contiguous ``out``."""
    rng = np.random.default_rng(seed)
    M, K, N = p["M"], p["K"], p["N"]
    A = rng.standard_normal((K, M)).astype(dtype).T if p["ta"] else rng.standard_normal((M, K)).astype(dtype)
    B = rng.standard_normal((N, K)).astype(dtype).T if p["tb"] else rng.standard_normal((K, N)).astype(dtype)
    return A, B, np.empty((M, N), dtype)


def rates(products, providers=None, *, repeat: int = 5, dtype="float32") -> list[dict]:
    """Each product on each provider (default: all here), interleaved per product, numpy the baseline.

    Returns one row per product: ``{"product", "gflop", "best", "median", "speedup", "interval", "noise"}`` --
    ``best`` / ``median``: GFLOP/s per provider; ``speedup`` / ``interval``: over numpy (> 1 = faster)."""
    providers = tuple(gemm.check_provider(p, "providers") for p in (gemm.providers() if providers is None
                                                                   else providers))
    if "numpy" not in providers:
        providers = ("numpy", *providers)     # the baseline every speed-up is over
    repeat = check_repeat(repeat)
    rows = []
    for p in products:
        A, B, out = operands(p, dtype)
        flops = gemm_flops(p["M"], p["N"], p["K"])
        cmp = compare(repeat=repeat, warmup=1, baseline="numpy",
                      **{v: (lambda v=v: gemm.gemm(A, B, out, provider=v)) for v in providers})
        rows.append({"product": p, "gflop": flops / 1e9,
                     "best": {v: flops / cmp.timings[v].min / 1e9 for v in providers},
                     "median": {v: flops / cmp.timings[v].median / 1e9 for v in providers},
                     "speedup": {v: cmp.speedup(v) for v in providers},
                     "interval": {v: cmp.speedup_interval(v) for v in providers}, "noise": cmp.noise})
    return rows


def pass_floor_ms(rows, T: int) -> dict:
    """Per provider: ms per time step the products in ``rows`` (from :func:`rates`) take at that provider's
    best rate for each shape, times their ``calls`` -- a floor under any pass built on that library."""
    T = check_positive_int(T, "T")
    providers = rows[0]["best"].keys() if rows else ()
    return {v: sum(1e3 * r["gflop"] * r["product"]["calls"] / r["best"][v] for r in rows) / T for v in providers}


def lstm_on_providers(batch: int = 64, nh: int = 512, nx: int = 512, T: int = 10, *, method: str = "workspace",
                      providers=None, backward: bool = True, repeat: int = 3) -> dict:
    """One LSTM pass with ``method`` on every provider (default: all here) and the per-gate ``naive`` loop
    on numpy, timed interleaved. Returns ``{"ms_per_step": {choice: ms}, "best_provider", "library": speed-up of
    the best provider over numpy (1.0 when numpy is the fastest), "best_other": the fastest provider but numpy
    (None without the extra), "other_over_numpy": its speed-up over numpy (< 1: slower), "algorithm": speed-up
    of ``method`` over naive (both on numpy), "comparison"}``."""
    providers = gemm.providers() if providers is None else tuple(providers)
    providers = tuple(dict.fromkeys(("numpy", *providers)))   # the method on numpy is what the others are over
    choices = lstm_experiments.choices((method,), providers)
    res = lstm_experiments.method_times(batch, nh, nx, T, methods=("naive", *choices), backward=backward,
                                        repeat=repeat)
    ms = res["ms_per_step"]
    best = min(choices, key=ms.get)
    other = min(choices[1:], key=ms.get) if len(choices) > 1 else None
    return {"ms_per_step": ms, "best_provider": lstm_experiments.split_choice(best)[1],
            "library": ms[method] / ms[best], "algorithm": ms["naive"] / ms[method], "comparison": res["comparison"],
            "best_other": other and lstm_experiments.split_choice(other)[1],
            "other_over_numpy": other and ms[method] / ms[other]}


RECORDED = Path(__file__).resolve().parent / "recorded"   # package data (pyproject): records travel with the course


def recorded_gains(folder=None) -> list[dict]:
    """Every ``*/lstm_providers.json`` under ``folder`` (default :data:`RECORDED`, where
    ``benchmarks/lstm.py --record course_lib/experiments/recorded/<machine>`` puts them), one row per recorded
    pass: ``{"machine", "record", "when", "load", "shape", "backward", "numpy_ms", "best", "best_ms", "gain"}`` -- the
    fastest choice on numpy alone, the fastest of all, and the speed-up the other providers added (1.0: none);
    ``load``: the higher 1-minute load average of the record's start and end (None if not kept).
    A missing folder gives ``[]``; an unreadable record is skipped."""
    rows = []
    for path in sorted(Path(RECORDED if folder is None else folder).glob("*/lstm_providers.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            for p in data["passes"]:
                table = {k: float(v) for k, v in p["table_ms"].items()}
                numpy_ms = min(v for k, v in table.items() if "@" not in k)
                best = min(table, key=table.get)
                rows.append({"machine": data["machine"]["cpu"], "record": path.parent.name, "when": data["when"],
                             "load": max((data["machine"][k] for k in ("load_1min", "load_1min_start")
                                          if data["machine"].get(k) is not None), default=None),
                             "shape": tuple(p["shape"]), "backward": bool(p["backward"]), "numpy_ms": numpy_ms,
                             "best": best, "best_ms": table[best], "gain": numpy_ms / table[best]})
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return rows
