"""Checks for worksheet 09 (LSTM, data layout, an autotuner).

* 9.1 ``fused_step(x, h, c, params) -> (h_new, c_new, gates)``: one LSTM step, PyTorch layout,
  ``gates (B, 4H)`` the activated [i | f | g | o];
* 9.2 ``step_transposed(preT, hT, cT, W_hh) -> (hT_new, cT_new, gatesT)``: the same step with
  the state stored transposed, ``(H, B)``, computed as ``Z^T = W_hh h^T``;
* 9.3 ``pick_fastest(candidates, repeat=3) -> (best_name, table_ms)``: a tiny autotuner;
* 9.4 ``cached_pick(cache, key, candidates) -> best_name``: never measures a key twice.

Failures say which gate (i, f, g or o) differs first, and where.
"""
from __future__ import annotations

import time

import numpy as np

from ...algorithms.activations import sigmoid
from ...models import lstm
from .core import Case, ExerciseFailed, compare_outputs, passed

__all__ = ["check_fused_step", "check_step_transposed", "check_pick_fastest", "check_cached_pick",
           "reference_fused_step", "reference_step_transposed", "gate_message"]


# --------------------------------------------------------------------------- references
def reference_fused_step(x, h, c, params):
    """One LSTM step: ``x (B, nx)``, ``h, c (B, H)`` -> ``(h', c', gates (B, 4H))``."""
    return lstm.lstm_step(params, x, h, c)


def reference_step_transposed(preT, hT, cT, W_hh):
    """Transposed step: ``preT (4H, B)`` = input projection plus both biases, ``hT, cT (H, B)``,
    ``W_hh (4H, H)`` -> ``(hT', cT', gatesT (4H, B))``."""
    zT = W_hh @ hT + preT
    H = hT.shape[0]
    gT = np.concatenate([sigmoid(zT[:2 * H]), np.tanh(zT[2 * H:3 * H]), sigmoid(zT[3 * H:])], axis=0)
    c_new = gT[H:2 * H] * cT + gT[:H] * gT[2 * H:3 * H]
    h_new = gT[3 * H:] * np.tanh(c_new)
    return h_new, c_new, gT


def gate_message(got, expected, H: int, axis: int, name: str, rtol: float, atol: float) -> str | None:
    """``None`` if the gate blocks match, else which gate (i, f, g, o) differs first and where."""
    got = np.asarray(got)
    if got.shape != expected.shape:
        return f"'{name}' has shape {tuple(got.shape)}, expected {tuple(expected.shape)} (4 gates x H = {4 * H} along axis {axis})"
    for k, gname in enumerate(lstm.GATES):
        sl = [slice(None)] * 2
        sl[axis] = slice(k * H, (k + 1) * H)
        msg = compare_outputs(got[tuple(sl)], expected[tuple(sl)], name=f"{name} gate {gname}", rtol=rtol,
                              atol=atol, time_axis=None)
        if msg:
            where = "columns" if axis == 1 else "rows"
            return (f"gate {gname} ({where} {k * H}:{(k + 1) * H} of {name}) differs: {msg}\n"
                    f"  the order is i, f, g, o: sigmoid on i, f, o and tanh on g")
    return None


def _run(exercise, student, reference, cases, H_of, axis, names, gates_name, hints):
    total = len(cases)
    for n, case in enumerate(cases, start=1):
        exp = reference(**case.kwargs)
        try:
            got = student(**{k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in case.kwargs.items()})
        except NotImplementedError:
            raise
        except Exception as exc:
            raise ExerciseFailed(f"Exercise {exercise} failed on case {n}/{total} ({case.label}):\n"
                                 f"  your function raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(got, tuple) or len(got) != 3:
            raise ExerciseFailed(f"Exercise {exercise} failed on case {n}/{total} ({case.label}):\n"
                                 f"  expected a tuple of 3 outputs ({', '.join(names)}), got {type(got).__name__}")
        H = H_of(case.kwargs)
        rtol, atol = 1e-4, 1e-5
        msg = gate_message(got[2], exp[2], H, axis, gates_name, rtol, atol)
        if msg:
            raise ExerciseFailed(f"Exercise {exercise} failed on case {n}/{total} ({case.label}):\n  {msg}"
                                 f"\n  Hint: {hints['gates']}")
        for i, what in ((1, "c"), (0, "h")):
            msg = compare_outputs(got[i], exp[i], name=names[i], rtol=rtol, atol=atol, time_axis=None)
            if msg:
                raise ExerciseFailed(f"Exercise {exercise} failed on case {n}/{total} ({case.label}):\n  {msg}"
                                     f"\n  all four gates match, so look at the update of {what}: {hints[what]}")
    return passed(exercise, total, total)


def _step_cases():
    out = []
    for i, (B, nx, H) in enumerate([(1, 3, 2), (4, 5, 3), (3, 2, 6), (8, 7, 4), (2, 16, 8)]):
        rng = np.random.default_rng(80 + i)
        p = lstm.init_params(nx, H, seed=i, dtype=np.float64)
        p.b_ih += 0.5 * rng.standard_normal(4 * H)  # make a swapped bias visible
        out.append(Case(dict(x=rng.standard_normal((B, nx)), h=rng.standard_normal((B, H)),
                             c=rng.standard_normal((B, H)), params=p), label=f"B={B}, nx={nx}, H={H}"))
    return out


def check_fused_step(student) -> str:
    """Exercise 9.1: one fused LSTM step in PyTorch's layout."""
    return _run("9.1", student, reference_fused_step, _step_cases(), lambda kw: kw["h"].shape[1], 1,
                ("h_new", "c_new", "gates"), "gates",
                {"gates": "z = x W_ih^T + h W_hh^T + b_ih + b_hh is (B, 4H); gate k is z[:, k*H:(k+1)*H]",
                 "c": "c' = f * c + i * g", "h": "h' = o * tanh(c')"})


def _transposed_cases():
    out = []
    for i, (B, H) in enumerate([(1, 2), (4, 3), (3, 6), (8, 4), (5, 8)]):
        rng = np.random.default_rng(180 + i)
        W_hh = rng.uniform(-0.5, 0.5, (4 * H, H))
        out.append(Case(dict(preT=rng.standard_normal((4 * H, B)), hT=rng.standard_normal((H, B)),
                             cT=rng.standard_normal((H, B)), W_hh=W_hh), label=f"B={B}, H={H}"))
    return out


def check_step_transposed(student) -> str:
    """Exercise 9.2: the step with the state transposed, ``Z^T = W_hh h^T + preT``."""
    return _run("9.2", student, reference_step_transposed, _transposed_cases(), lambda kw: kw["hT"].shape[0], 0,
                ("hT_new", "cT_new", "gatesT"), "gatesT",
                {"gates": "zT = W_hh @ hT + preT is (4H, B); gate k is zT[k*H:(k+1)*H] (rows, not columns)",
                 "c": "cT' = f * cT + i * g (all (H, B))", "h": "hT' = o * tanh(cT')"})


# --------------------------------------------------------------------------- autotuner
def _sleeper(ms: float, counter: dict, name: str):
    def run():
        counter[name] = counter.get(name, 0) + 1
        time.sleep(ms / 1e3)
    return run


_SLEEPS = {"slow": 24.0, "fast": 3.0, "medium": 10.0}


def check_pick_fastest(student) -> str:
    """Exercise 9.3: ``pick_fastest(candidates, repeat=3) -> (best_name, table_ms)``."""
    counter: dict = {}
    cands = {k: _sleeper(ms, counter, k) for k, ms in _SLEEPS.items()}
    try:
        got = student(cands, repeat=3)
    except NotImplementedError:
        raise
    except Exception as exc:
        raise ExerciseFailed(f"Exercise 9.3 failed:\n  your function raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(got, tuple) or len(got) != 2:
        raise ExerciseFailed("Exercise 9.3 failed:\n  expected a tuple (best_name, table_ms)")
    best, table = got
    if not isinstance(table, dict) or set(table) != set(cands):
        keys = sorted(table) if isinstance(table, dict) else type(table).__name__
        raise ExerciseFailed(f"Exercise 9.3 failed:\n  table_ms must have one entry per candidate "
                             f"{sorted(cands)}, got {keys}")
    for name, ms in _SLEEPS.items():
        if counter.get(name, 0) < 3:
            raise ExerciseFailed(f"Exercise 9.3 failed:\n  candidate {name!r} ran {counter.get(name, 0)} time(s); "
                                 f"expected at least repeat=3 timed runs")
        val = table[name]
        if not isinstance(val, (int, float)) or not (0.8 * ms <= val <= 20 * ms):
            raise ExerciseFailed(
                f"Exercise 9.3 failed:\n  table_ms[{name!r}] = {val!r}, but that candidate sleeps {ms:g} ms per call"
                f"\n  Hint: time each call with time.perf_counter() and report milliseconds (x 1e3), "
                f"e.g. the median of the repeats")
    if best != min(table, key=table.get):
        raise ExerciseFailed(f"Exercise 9.3 failed:\n  best_name is {best!r}, but your own table says "
                             f"{min(table, key=table.get)!r} is fastest")
    if best != "fast":
        raise ExerciseFailed(f"Exercise 9.3 failed:\n  picked {best!r}; the fastest candidate is 'fast' (3 ms)")
    return passed("9.3")


def check_cached_pick(student) -> str:
    """Exercise 9.4: ``cached_pick(cache, key, candidates)`` measures a key once, then remembers."""
    counter: dict = {}
    cands = {k: _sleeper(ms / 4, counter, k) for k, ms in _SLEEPS.items()}
    cache: dict = {}
    try:
        first = student(cache, "B=64,H=512", cands)
        runs = dict(counter)
        second = student(cache, "B=64,H=512", cands)
        again = {k: counter.get(k, 0) - runs.get(k, 0) for k in cands}
        other = student(cache, "B=1,H=512", cands)
    except NotImplementedError:
        raise
    except Exception as exc:
        raise ExerciseFailed(f"Exercise 9.4 failed:\n  your function raised {type(exc).__name__}: {exc}") from exc
    if not runs:
        raise ExerciseFailed("Exercise 9.4 failed:\n  the first call for a new key did not run any candidate: "
                             "it must measure (call pick_fastest)")
    if first != "fast":
        raise ExerciseFailed(f"Exercise 9.4 failed:\n  the first call returned {first!r}, expected 'fast'")
    if "B=64,H=512" not in cache:
        raise ExerciseFailed(f"Exercise 9.4 failed:\n  after the first call the cache has keys {sorted(cache)}; "
                             f"expected the decision stored under 'B=64,H=512'")
    if any(again.values()):
        ran = ", ".join(f"{k!r} {n} time(s)" for k, n in again.items() if n)
        raise ExerciseFailed(f"Exercise 9.4 failed:\n  the second call with a cached key measured again ({ran}); "
                             f"a cached decision must be returned without running anything")
    if second != first:
        raise ExerciseFailed(f"Exercise 9.4 failed:\n  the second call returned {second!r}, the first {first!r}")
    if other != "fast" or "B=1,H=512" not in cache:
        raise ExerciseFailed("Exercise 9.4 failed:\n  a new key must be measured and stored under its own name")
    return passed("9.4")
