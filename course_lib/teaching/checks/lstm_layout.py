"""Checks for worksheet 09 (LSTM, data layout, an autotuner).

* 9.1 ``fused_step(x, h, c, params) -> (h_new, c_new, gates)``: one LSTM step, PyTorch layout,
  ``gates (B, 4H)`` the activated [i | f | g | o];
* 9.2 ``step_transposed(preT, hT, cT, W_hh) -> (hT_new, cT_new, gatesT)``: the same step with
  the state stored transposed, ``(H, B)``, computed as ``Z^T = W_hh h^T``;
* 9.3 ``pick_fastest(candidates, repeat=3) -> (best_name, table_ms)``: a tiny autotuner;
* 9.4 ``cached_pick(cache, key, candidates) -> best_name``: never measures a key twice;
* 9.5 ``forward_one_gemm(params, X, h0, c0) -> H (T, B, H)``: a speed exercise -- the numbers, then
  the matrix products counted (exactly ONE per time step, the input projection of all steps done
  once before the loop, nothing depending on ``B``), then the speed against the course's per-gate
  step (``lstm_forward(method="naive")``, 8 products per step) measured in the same run by
  :func:`.speed.judge_speed` (a fresh input per timed call, every timed result compared): at least
  :data:`MIN_SPEEDUP` times faster, BLAS on one thread for both. 9.1 and 9.5 reject a solution that
  calls the course's own answer (``lstm.lstm_step``, ``lstm.lstm_forward``; :mod:`.shortcuts`).

Failures say which gate (i, f, g or o) differs first, and where. Inputs changed in place are rejected,
and a float64 result where the inputs are float32 passes with a note (the course's dtype rule).
"""
from __future__ import annotations

import time

import numpy as np

from ...algorithms.activations import sigmoid
from ...models import lstm
from .shortcuts import check_no_shortcut
from .core import Case, ExerciseFailed, Passed, compare_outputs, passed
from .core import count_products, counted
from .speed import judge_speed

__all__ = ["check_fused_step", "check_step_transposed", "check_pick_fastest", "check_cached_pick",
           "check_forward_one_gemm", "reference_fused_step", "reference_step_transposed", "gate_message",
           "MIN_SPEEDUP", "SPEED_SHAPE"]

MIN_SPEEDUP = 1.5                 # 9.5: one GEMM per step vs the per-gate step (8 GEMMs), same run
SPEED_SHAPE = (32, 8, 32, 32)     # (T, B, nx, H) of the timed run: small, so the call count matters


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


def gate_message(got, expected, nh: int, axis: int, name: str, rtol: float, atol: float) -> str | None:
    """``None`` if the gate blocks match, else which gate (i, f, g, o) differs first and where."""
    got = np.asarray(got)
    if got.shape != expected.shape:
        return f"'{name}' has shape {tuple(got.shape)}, expected {tuple(expected.shape)} (4 gates x H = {4 * nh} along axis {axis})"
    for k, gname in enumerate(lstm.GATES):
        sl = [slice(None)] * 2
        sl[axis] = slice(k * nh, (k + 1) * nh)
        msg = compare_outputs(got[tuple(sl)], expected[tuple(sl)], name=f"{name} gate {gname}", rtol=rtol,
                              atol=atol, time_axis=None)
        if msg:
            where = "columns" if axis == 1 else "rows"
            return (f"gate {gname} ({where} {k * nh}:{(k + 1) * nh} of {name}) differs: {msg}\n"
                    f"  the order is i, f, g, o: sigmoid on i, f, o and tanh on g")
    return None


def _copy(v):
    if isinstance(v, np.ndarray):
        return v.copy()
    if isinstance(v, lstm.LSTMParams):
        return lstm.LSTMParams(v.W_ih.copy(), v.W_hh.copy(), v.b_ih.copy(), v.b_hh.copy())
    return v


def _arrays(kwargs) -> dict:
    out = {}
    for k, v in kwargs.items():
        if isinstance(v, np.ndarray):
            out[k] = v
        elif isinstance(v, lstm.LSTMParams):
            out.update({f"{k}.{f}": getattr(v, f) for f in ("W_ih", "W_hh", "b_ih", "b_hh")})
    return out


def changed_input(after: dict, before: dict) -> str:
    """The name of the first array in ``before`` whose values differ in ``after`` ("" if none)."""
    for name, old in _arrays(before).items():
        new = _arrays(after)[name]
        if new.shape != old.shape or not np.array_equal(new, old, equal_nan=True):
            return name
    return ""


DTYPE_NOTE = "note: your result is float64 where the inputs are float32 -- right numbers, twice the bytes"


def _float64_where_32(got, exp) -> bool:
    return any(isinstance(g, np.ndarray) and g.dtype == np.float64 and np.asarray(e).dtype == np.float32
               for g, e in zip(got, exp))


def _run(exercise, student, reference, cases, H_of, axis, names, gates_name, hints, forbidden=None, quiet=False):
    total = len(cases)
    notes = []
    for n, case in enumerate(cases, start=1):
        exp = reference(**{k: _copy(v) for k, v in case.kwargs.items()})
        mine = {k: _copy(v) for k, v in case.kwargs.items()}
        try:
            got = student(*mine.values())   # positionally, in the documented order
        except NotImplementedError:
            raise
        except Exception as exc:
            raise ExerciseFailed(f"Exercise {exercise} failed on case {n}/{total} ({case.label}):\n"
                                 f"  your function raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(got, tuple) or len(got) != 3:
            raise ExerciseFailed(f"Exercise {exercise} failed on case {n}/{total} ({case.label}):\n"
                                 f"  expected a tuple of 3 outputs ({', '.join(names)}), got {type(got).__name__}")
        changed = changed_input(mine, case.kwargs)
        if changed:
            raise ExerciseFailed(f"Exercise {exercise} failed on case {n}/{total} ({case.label}):\n  your function "
                                 f"changed its input {changed} in place; compute into new arrays and leave the "
                                 f"inputs as they were (the caller still needs them)")
        if _float64_where_32(got, exp) and DTYPE_NOTE not in notes:
            notes.append(DTYPE_NOTE)
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
    if forbidden:
        check_no_shortcut(exercise, student, forbidden, *(_copy(v) for v in cases[0].kwargs.values()))
    return _passed_with_notes(exercise, total, notes, quiet=quiet)


def _passed_with_notes(exercise, total, notes, quiet=False):
    line = Passed(f"Exercise {exercise} passed: {total}/{total} cases" + "".join(f" ({n})" for n in notes))
    if not quiet:
        print(line)
    return line


def _step_cases():
    out = []
    for i, (B, nx, H) in enumerate([(1, 3, 2), (4, 5, 3), (3, 2, 6), (8, 7, 4), (2, 16, 8)]):
        rng = np.random.default_rng(80 + i)
        dt = np.float32 if i == 4 else np.float64   # the last case in float32, like the chapter
        p = lstm.init_params(nx, H, seed=i, dtype=np.float64)
        p.b_ih += 0.5 * rng.standard_normal(4 * H)  # make a swapped bias visible
        p = lstm.LSTMParams(*(a.astype(dt) for a in (p.W_ih, p.W_hh, p.b_ih, p.b_hh)))
        out.append(Case(dict(x=rng.standard_normal((B, nx)).astype(dt), h=rng.standard_normal((B, H)).astype(dt),
                             c=rng.standard_normal((B, H)).astype(dt), params=p),
                        label=f"B={B}, nx={nx}, H={H}, {np.dtype(dt).name}"))
    return out


def check_fused_step(student) -> str:
    """Exercise 9.1: one fused LSTM step in PyTorch's layout.

    Property: all four gates from ONE stacked product per operand. The numbers (gate by gate, five shapes, one
    float32), the inputs unchanged, then the matrix products reading ``W_ih``/``W_hh`` counted
    (:func:`_stacked_products`): at most 2 -- a per-gate step (8 products, the numbers identical) is named."""
    line = _run("9.1", student, reference_fused_step, _step_cases(), lambda kw: kw["h"].shape[1], 1,
                ("h_new", "c_new", "gates"), "gates",
                {"gates": "z = x W_ih^T + h W_hh^T + b_ih + b_hh is (B, 4H); gate k is z[:, k*H:(k+1)*H]",
                 "c": "c' = f * c + i * g", "h": "h' = o * tanh(c')"}, {"lstm.lstm_step": lstm.lstm_step},
                quiet=True)
    _stacked_products("9.1", student, transposed=False)
    print(line)
    return line


def _stacked_products(ex: str, student, *, transposed: bool) -> None:
    """Count the products reading the (counted) weights in one step (H=3, B=5, nx=4: every shape distinct).
    9.1: at most 2 (x W_ih^T and h W_hh^T; 1 with the weights stacked side by side); 9.2: exactly one product
    with ``W_hh`` on the LEFT -- ``(hT.T @ W_hh.T).T`` is the row layout of 9.1 transposed back, and is named."""
    H, B, nx = 3, 5, 4
    rng = np.random.default_rng(91)
    p = lstm.init_params(nx, H, seed=91, dtype=np.float64)
    if transposed:
        args = (rng.standard_normal((4 * H, B)), rng.standard_normal((H, B)), rng.standard_normal((H, B)),
                counted(p.W_hh))
    else:
        args = (rng.standard_normal((B, nx)), rng.standard_normal((B, H)), rng.standard_normal((B, H)),
                lstm.LSTMParams(counted(p.W_ih), counted(p.W_hh), p.b_ih.copy(), p.b_hh.copy()))
    from .core import CountedArray

    CountedArray.log = []
    try:
        student(*args)
        log = list(CountedArray.log)
    except NotImplementedError:
        raise
    except Exception as exc:
        raise ExerciseFailed(f"Exercise {ex} failed while counting its matrix products (H={H}, B={B}):\n  your "
                             f"function raised {type(exc).__name__}: {exc}") from exc
    finally:
        CountedArray.log = None
    where = f"(counted with the weights, H={H}, B={B})"
    most = 1 if transposed else 2
    if len(log) > most:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  your numbers are right, but one step makes {len(log)} matrix products with "
            f"the weights {where}: one per gate, the per-gate step this exercise replaces.\n  Hint: "
            + ("zT = W_hh @ hT + preT is all four gates' pre-activations at once; the gates are its row blocks."
               if transposed else "z = x @ W_ih.T + h @ W_hh.T + b_ih + b_hh is (B, 4H): all four gates from one "
                                  "product per operand; the gates are its column blocks."))
    if transposed and any(e[0] == "matmul" and len(e) == 3 and e[2] == (H, 4 * H) for e in log):
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  your numbers are right, but the product multiplies by W_hh.T on the right "
            f"{where}: that is the row layout of 9.1 transposed back ((hT.T @ W_hh.T).T), the transposes this "
            "layout exists to avoid.\n  Hint: zT = W_hh @ hT -- (4H, H) @ (H, B) -- with no transpose at all.")


def _transposed_cases():
    out = []
    for i, (B, H) in enumerate([(1, 2), (4, 3), (3, 6), (8, 4), (5, 8)]):
        rng = np.random.default_rng(180 + i)
        dt = np.float32 if i == 4 else np.float64
        W_hh = rng.uniform(-0.5, 0.5, (4 * H, H)).astype(dt)
        out.append(Case(dict(preT=rng.standard_normal((4 * H, B)).astype(dt), hT=rng.standard_normal((H, B)).astype(dt),
                             cT=rng.standard_normal((H, B)).astype(dt), W_hh=W_hh),
                        label=f"B={B}, H={H}, {np.dtype(dt).name}"))
    return out


def check_step_transposed(student) -> str:
    """Exercise 9.2: the step with the state transposed, ``Z^T = W_hh h^T + preT``.

    Property: the transposed layout, ``W_hh @ hT`` with no transpose. The numbers gate by gate (the gates are
    row blocks), the inputs unchanged, then the product counted and its operands' shapes read
    (:func:`_stacked_products`): one product, ``W_hh`` on the left; ``(hT.T @ W_hh.T).T`` is named."""
    line = _run("9.2", student, reference_step_transposed, _transposed_cases(), lambda kw: kw["hT"].shape[0], 0,
                ("hT_new", "cT_new", "gatesT"), "gatesT",
                {"gates": "zT = W_hh @ hT + preT is (4H, B); gate k is zT[k*H:(k+1)*H] (rows, not columns)",
                 "c": "cT' = f * cT + i * g (all (H, B))", "h": "hT' = o * tanh(cT')"}, quiet=True)
    _stacked_products("9.2", student, transposed=True)
    print(line)
    return line


# --------------------------------------------------------------------------- autotuner
def _sleeper(ms: float, counter: dict, name: str, took: dict | None = None):
    def run():
        counter[name] = counter.get(name, 0) + 1
        t0 = time.perf_counter()
        time.sleep(ms / 1e3)
        if took is not None:
            took.setdefault(name, []).append((time.perf_counter() - t0) * 1e3)
    return run


_SLEEPS = {"slow": 24.0, "fast": 3.0, "medium": 10.0}


def check_pick_fastest(student) -> str:
    """Exercise 9.3: ``pick_fastest(candidates, repeat=3) -> (best_name, table_ms)``.

    Property: a median (or any per-call statistic) of ``repeat`` separately timed calls, in milliseconds. Each
    candidate records how long each of its calls really took; ``table_ms[name]`` must lie within
    those durations (any per-call statistic -- median, mean, min -- does), so a total of the three
    timed calls, seconds instead of milliseconds or a made-up number are named; a second run with
    ``repeat=5`` names a fixed number of repeats."""
    counter: dict = {}
    took: dict = {}
    cands = {k: _sleeper(ms, counter, k, took) for k, ms in _SLEEPS.items()}
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
    hint = ("\n  Hint: time each call on its own: t0 = time.perf_counter(); fn(); "
            "times.append(time.perf_counter() - t0); then report the median of the repeats x 1e3 (milliseconds)")
    for name, _ms in _SLEEPS.items():
        if counter.get(name, 0) < 3:
            raise ExerciseFailed(f"Exercise 9.3 failed:\n  candidate {name!r} ran {counter.get(name, 0)} time(s); "
                                 f"expected at least repeat=3 timed runs")
        val = table[name]
        if isinstance(val, (np.floating, np.integer)):
            val = float(val)
        if not isinstance(val, (int, float)) or isinstance(val, bool):
            raise ExerciseFailed(f"Exercise 9.3 failed:\n  table_ms[{name!r}] = {val!r:.80}; expected a number "
                                 f"(milliseconds per call)" + hint)
        calls = took[name]
        lo, hi = min(calls), max(calls)
        if lo * 0.9 - 0.05 <= val <= hi * 1.1 + 0.2:
            continue
        fact = (f"table_ms[{name!r}] = {val:.4g}, but one call of that candidate took between {lo:.3g} and "
                f"{hi:.3g} ms")
        timed = calls[-3:]
        if abs(val - sum(timed)) <= 0.15 * sum(timed) or abs(val - sum(calls)) <= 0.15 * sum(calls):
            why = "that is the total of the calls, not the time of one call: divide by the number of calls"
        elif lo * 0.9e-3 - 1e-4 <= val <= hi * 1.1e-3 + 2e-4:
            why = "that is the time in seconds: report milliseconds (x 1e3)"
        elif val < lo:
            why = "that is shorter than any call took: is the clock read around the call?"
        else:
            why = "that is longer than any single call took: time each call on its own"
        raise ExerciseFailed(f"Exercise 9.3 failed:\n  {fact}; {why}" + hint)
    if best != min(table, key=table.get):
        raise ExerciseFailed(f"Exercise 9.3 failed:\n  best_name is {best!r}, but your own table says "
                             f"{min(table, key=table.get)!r} is fastest")
    if best != "fast":
        raise ExerciseFailed(f"Exercise 9.3 failed:\n  picked {best!r}; the fastest candidate is 'fast' (3 ms)")
    _check_repeat_honoured(student)
    return passed("9.3")


def _check_repeat_honoured(student, repeat: int = 5) -> None:
    """``repeat`` is the student's to honour: a second run with ``repeat=5`` (1 ms candidates) must call every
    candidate at least 6 times (the warm-up, then 5 timed) -- a loop fixed at 3 (the default), and a missing
    warm-up call, are named."""
    counter: dict = {}
    cands = {k: _sleeper(1.0, counter, k) for k in ("a", "b")}
    try:
        student(cands, repeat=repeat)
    except NotImplementedError:
        raise
    except Exception as exc:
        raise ExerciseFailed(f"Exercise 9.3 failed with repeat={repeat}:\n  your function raised "
                             f"{type(exc).__name__}: {exc}") from exc
    short = {k: counter.get(k, 0) for k in cands if counter.get(k, 0) < repeat + 1}
    if short:
        name, n = next(iter(short.items()))
        if n == repeat:
            raise ExerciseFailed(
                f"Exercise 9.3 failed with repeat={repeat}:\n  candidate {name!r} ran {n} times in all: {repeat} timed "
                "calls and no warm-up call -- the first call of a function pays for compiling, caches and page "
                "faults, and the statement asks for one untimed call first.\n  Hint: fn() once, then the timed loop.")
        raise ExerciseFailed(
            f"Exercise 9.3 failed with repeat={repeat}:\n  candidate {name!r} ran {n} time(s) in all; with "
            f"repeat={repeat} it must be timed {repeat} times after its warm-up call: your function ignores its "
            "`repeat` argument.\n  Hint: for _ in range(repeat): ... -- not a fixed count.")


def check_cached_pick(student) -> str:
    """Exercise 9.4: ``cached_pick(cache, key, candidates)`` measures a key once, then remembers.

    Property: never measure twice. The candidates count their calls: the first call of a key must run them,
    the second with the same key none (a cache read on the wrong key, or a re-measure, is named), a new key is
    measured and stored under its own name."""
    counter: dict = {}
    cands = {k: _sleeper(ms, counter, k) for k, ms in _SLEEPS.items()}  # 3 vs 10 ms: no flake under load
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


# --------------------------------------------------------------------------- 9.5: one GEMM per step
def _forward_cases():
    out = []
    for i, (T, B, nx, H, dt) in enumerate([(1, 1, 3, 2, np.float64), (5, 3, 4, 3, np.float64),
                                           (7, 2, 5, 6, np.float64), (6, 4, 8, 8, np.float32)]):
        rng = np.random.default_rng(95 + i)
        p = lstm.init_params(nx, H, seed=i, dtype=np.float64)
        p.b_ih += 0.5 * rng.standard_normal(4 * H)
        p.b_hh -= 0.3 * rng.standard_normal(4 * H)
        p = lstm.LSTMParams(*(a.astype(dt) for a in (p.W_ih, p.W_hh, p.b_ih, p.b_hh)))
        out.append(Case(dict(params=p, X=rng.standard_normal((T, B, nx)).astype(dt),
                             h0=(0.5 * rng.standard_normal((B, H))).astype(dt),
                             c0=rng.standard_normal((B, H)).astype(dt)),
                        label=f"T={T}, B={B}, nx={nx}, H={H}, {np.dtype(dt).name}"))
    return out


def _reference_forward(params, X, h0, c0):
    return lstm.lstm_forward(params, X, h0, c0, method="naive")[0]


def _call_forward(ex, student, label, kwargs):
    try:
        return student(*kwargs.values())   # positionally: (params, X, h0, c0)
    except NotImplementedError:
        raise
    except Exception as exc:
        raise ExerciseFailed(f"Exercise {ex} failed on {label}:\n  your function raised {type(exc).__name__}: "
                             f"{exc}") from exc


def check_forward_one_gemm(student, *, min_speedup: float = MIN_SPEEDUP, retries: int = 2) -> str:
    """Exercise 9.5: ``forward_one_gemm(params, X, h0, c0) -> H (T, B, H)`` with ONE matrix product
    per time step (see the module doc): numbers, products counted, speed vs the per-gate step.

    Property: one product per step, the input projection hoisted. Products counted at four (T, B): growing with
    B, faster than T, 4 or more per step, or the projection left in the loop, each named; ``lstm.lstm_forward``
    is a shortcut; the speed-up over the per-gate step must lie wholly above :data:`MIN_SPEEDUP`, and the pass
    prints it."""
    ex = "9.5"
    if not callable(student):
        raise ExerciseFailed(f"Exercise {ex}: expected a function, got {type(student).__name__}")
    cases = _forward_cases()
    notes = []
    for n, case in enumerate(cases, start=1):
        label = f"case {n}/{len(cases)} ({case.label})"
        exp = _reference_forward(**{k: _copy(v) for k, v in case.kwargs.items()})
        mine = {k: _copy(v) for k, v in case.kwargs.items()}
        got = _call_forward(ex, student, label, mine)
        if isinstance(got, tuple) and len(got) >= 1:
            raise ExerciseFailed(f"Exercise {ex} failed on {label}:\n  expected the array H (T, B, H) of every "
                                 f"step's state, got a tuple of {len(got)}")
        changed = changed_input(mine, case.kwargs)
        if changed:
            raise ExerciseFailed(f"Exercise {ex} failed on {label}:\n  your function changed its input {changed} in "
                                 f"place; compute into new arrays and leave the inputs as they were")
        msg = compare_outputs(got, exp, name="H", rtol=1e-4, atol=1e-5, time_axis=0)
        if msg:
            raise ExerciseFailed(
                f"Exercise {ex} failed on {label}:\n  {msg}\n  Hint: pre = X W_ih^T + b_ih + b_hh for all steps "
                f"(T, B, 4H); per step z = pre[t] + h W_hh^T; gates i, f, g, o = z's column blocks; "
                f"c = f c + i g; h = o tanh(c); H[t] = h. The state starts at h0, c0.")
        if _float64_where_32((got,), (exp,)) and DTYPE_NOTE not in notes:
            notes.append(DTYPE_NOTE)
    _check_one_gemm_per_step(ex, student)
    check_no_shortcut(ex, student, {"lstm.lstm_forward": lstm.lstm_forward},
                      *(_copy(v) for v in cases[1].kwargs.values()))
    T, B, nx, Hn = SPEED_SHAPE
    p = lstm.init_params(nx, Hn, seed=5)

    def make_input(rng):   # a fresh X and state for every timed call
        return {"params": p, "X": rng.standard_normal((T, B, nx)).astype(np.float32),
                "h0": (0.5 * rng.standard_normal((B, Hn))).astype(np.float32),
                "c0": rng.standard_normal((B, Hn)).astype(np.float32)}

    judged = judge_speed(ex, lambda params, X, h0, c0: student(params, X, h0, c0), _reference_forward,
                lambda params, X, h0, c0: lstm.lstm_forward(params, X, h0, c0, method="naive"), make_input,
                min_speedup=min_speedup, baseline_name="per_gate",
                baseline_desc="the course's per-gate step (8 products per step)", rtol=1e-4, atol=1e-5,
                retries=retries, repeat=7, blas_threads=1, seed=6,
                label=f"T={T}, B={B}, nx={nx}, H={Hn}, float32",
                context="your numbers are right and you make one product per step",
                hint="keep the element-wise work to a few whole-array operations per step (one sigmoid over the "
                     "(B, 4H) block, slices for the gates); no Python loop over the batch or the units.")
    line = _passed_with_notes(ex, len(cases), notes)
    print(f"  speed: {judged.earned}")
    return line


def _counted_lstm(p):
    return lstm.LSTMParams(counted(p.W_ih), counted(p.W_hh), p.b_ih.copy(), p.b_hh.copy())


def _check_one_gemm_per_step(ex: str, student) -> None:
    p = lstm.init_params(3, 4, seed=9, dtype=np.float64)
    rng = np.random.default_rng(10)
    n = {}
    for T, B in ((4, 1), (4, 5), (8, 5), (12, 5)):
        X = rng.standard_normal((T, B, 3))
        h0, c0 = rng.standard_normal((B, 4)), rng.standard_normal((B, 4))
        label = f"the product count (T={T}, B={B})"
        try:
            n[T, B], _ = count_products(student, _counted_lstm(p), X, h0, c0)
        except NotImplementedError:
            raise
        except Exception as exc:
            raise ExerciseFailed(f"Exercise {ex} failed on {label}:\n  your function raised {type(exc).__name__}: "
                                 f"{exc}") from exc
    per_step = (n[12, 5] - n[8, 5]) / 4
    fixed = n[4, 5] - 4 * per_step
    counts = (f"(counted with the weights: {n[4, 1]} products for T=4, B=1; {n[4, 5]} for T=4, B=5; {n[8, 5]} "
              f"for T=8; {n[12, 5]} for T=12)")
    if n[4, 5] != n[4, 1]:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  your function makes {n[4, 5]} matrix products for B=5 sequences but "
            f"{n[4, 1]} for B=1 {counts}: it loops over the batch.\n  Hint: h is (B, H): one product h @ W_hh.T "
            f"serves the whole batch.")
    if n[8, 5] - n[4, 5] != n[12, 5] - n[8, 5]:
        raise ExerciseFailed(f"Exercise {ex} failed:\n  the number of matrix products grows faster than T {counts}: "
                             f"some step recomputes earlier steps.")
    if per_step == 0:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  the check counts the matrix products made with params.W_ih and params.W_hh "
            f"and saw none inside the time loop {counts}.\n  Hint: use the weights as given (no np.asarray / "
            f"np.ascontiguousarray copies, no course function) so the products can be counted.")
    if per_step >= 4:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  your function makes {per_step:g} matrix products per time step {counts}: one "
            f"per gate (or per gate and operand), like the per-gate step it must beat.\n  Hint: W_hh (4H, H) holds "
            f"all four gates: one product h @ W_hh.T gives z for i, f, g and o at once.")
    if per_step != 1:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  your function makes {per_step:g} matrix products per time step {counts}; one "
            f"is the goal.\n  Hint: the input projection does not depend on h: compute X W_ih^T for ALL steps as "
            f"one product before the loop ((T*B, nx) @ (nx, 4H)); inside the loop only h @ W_hh.T remains.")
    if fixed > 2:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  besides one product per step your function makes {fixed:g} more {counts}; the "
            f"input projection of all steps is ONE product (X reshaped to (T*B, nx)).")
