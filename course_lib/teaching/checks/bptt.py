"""Checks for worksheet 02 (BPTT): the O(N) sweep, the O(N²) double loop, measured complexity.

A wrong gradient is reported with *which* gradient (``Wxh``, ``Whh``, ``Why``) is off and the
first time step where it goes wrong. That step is found by running both functions on the
prefixes ``X[:1], X[:2], ...`` of the same sequence: if the gradients agree for every prefix up
to length ``k`` and not for length ``k + 1``, the mistake first shows at time step ``k``
(0-based) -- step 0 means the purely local terms are wrong; a later step means the error
carried back from later steps is.
"""
from __future__ import annotations

import contextlib
import io

import numpy as np

from ...core import backend
from ...models import rnn
from ...models.gradcheck import relative_error
from .serial_rnn import random_problem
from ...core.timing import loglog_slope
from .core import ExerciseFailed, check_slope, count_products, counted, passed

__all__ = ["diagnose_gradients", "check_bptt_linear", "check_bptt_quadratic", "check_complexity",
           "gradient_cases", "whh_products", "best_of_calls", "TimingProbe", "PRODUCT_TS", "PROBE_TS"]

GRAD_SHAPES = [(1, 2, 3, 4, 2), (3, 2, 3, 4, 2), (5, 3, 4, 5, 3), (7, 1, 2, 6, 2), (6, 4, 5, 3, 4)]


def gradient_cases(seed: int = 0, dtype=np.float64):
    """The seeded problems the checks use: a list of ``(params, X, Y, h0)``."""
    rng = np.random.default_rng(seed)
    return [random_problem(rng, *shape, dtype=dtype) for shape in GRAD_SHAPES]


def _grads(fn, params, X, Y, h0, **kw):
    out = fn(params.copy(), X.copy(), Y.copy(), None if h0 is None else h0.copy(), **kw)
    if isinstance(out, rnn.RNNParams):
        return out
    raise ExerciseFailed(f"expected an RNNParams(Wxh=..., Whh=..., Why=...) of gradients (the weights' own class), "
                         f"got {type(out).__name__}")


def _wrong_fields(got: rnn.RNNParams, ref: rnn.RNNParams, rtol: float) -> dict[str, str]:
    wrong = {}
    for name, g, e in zip(ref.names(), got.arrays(), ref.arrays()):
        g = np.asarray(g)
        if g.shape != e.shape:
            wrong[name] = f"has shape {g.shape}, expected {e.shape}"
            continue
        if not np.all(np.isfinite(g)):
            wrong[name] = "contains NaN or inf"
            continue
        err = relative_error(g, e)
        if err > rtol:
            wrong[name] = f"max relative error {err:.2e}"
    return wrong


def diagnose_gradients(student, reference, params, X, Y, h0=None, *, rtol: float = 1e-6, **kw) -> str | None:
    """``None`` when ``student`` and ``reference`` give the same gradients, else a message naming
    the wrong gradient(s) and the first time step (via prefixes of the sequence) where they go wrong."""
    got = _grads(student, params, X, Y, h0, **kw)
    ref = _grads(reference, params, X, Y, h0, **kw)
    wrong = _wrong_fields(got, ref, rtol)
    if not wrong:
        return None
    lines = [f"gradient d{name} is wrong: {why}" for name, why in wrong.items()]
    T = X.shape[0]
    first = None
    for k in range(1, T + 1):
        try:
            w = _wrong_fields(_grads(student, params, X[:k], Y[:k], h0, **kw),
                              _grads(reference, params, X[:k], Y[:k], h0, **kw), rtol)
        except Exception:
            w = {"?": "raised"}
        if w:
            first = (k, w)
            break
    if first is not None:
        k, w = first
        names = ", ".join(f"d{n}" for n in w)
        if k == 1:
            lines.append(f"it diverges at time step 0: already with a sequence of length 1 ({names} wrong), "
                         "so a local term is off -- the output error 2(ŷ-y)(1-ŷ²), the tanh derivative "
                         "(1-h_t²), or an outer product (x_t^T, h_(t-1)^T, h_t^T)")
        else:
            lines.append(f"it diverges at time step {k - 1}: correct for sequences of length "
                         f"{'1' if k == 2 else f'1..{k - 1}'}, "
                         f"wrong from length {k} on ({names} wrong), so the error carried back from later "
                         "steps is off -- check dh_next (= dpre_(t+1) Whh^T) and that it is added to dh_t")
    if "Whh" in wrong and "Wxh" not in wrong:
        lines.append("dWxh is right but dWhh is not: dWhh pairs dpre_t with h_(t-1) (h0 at t=0), not h_t")
    if set(wrong) == {"Why"}:
        lines.append("only dWhy is wrong: it is Σ_t h_t^T dO_t with dO_t = 2(ŷ_t-y_t)(1-ŷ_t²)")
    return "\n  ".join(lines)


def _step_terms(params, X, Y, h0):
    """Each time step's own contribution to the three weight gradients (from the exact sweep)."""
    c = rnn.forward(params, X, h0)
    dO = rnn.output_error(c.Yhat, Y)
    T = X.shape[0]
    dpre = np.empty_like(c.H)
    dh_next = np.zeros_like(c.H[0])
    for t in range(T - 1, -1, -1):
        dpre[t] = (dO[t] @ params.Why.T + dh_next) * (1 - c.H[t] ** 2)
        dh_next = dpre[t] @ params.Whh.T
    return {"Wxh": [X[t].T @ dpre[t] for t in range(T)], "Whh": [c.H_prev[t].T @ dpre[t] for t in range(T)],
            "Why": [c.H[t].T @ dO[t] for t in range(T)]}


def _walk(params, X, Y, h0, lowest) -> rnn.RNNParams:
    """The double loop of 2.2 in float64 whose walk from output step ``t`` visits ``s = t, t-1, ...,
    lowest(t)`` (none when ``lowest(t) > t``): the reference's bounds and its off-by-one variants."""
    c = rnn.forward(params, X, h0)
    dO = rnn.output_error(c.Yhat, Y)
    g = params.zeros_like()
    for t in range(X.shape[0] - 1, -1, -1):
        g.Why += c.H[t].T @ dO[t]
        delta = (dO[t] @ params.Why.T) * (1.0 - c.H[t] ** 2)
        for s in range(t, lowest(t) - 1, -1):
            g.Whh += c.H_prev[s].T @ delta
            g.Wxh += X[s].T @ delta
            delta = (delta @ params.Whh.T) * (1.0 - c.H_prev[s] ** 2)
    return g


def _walk_variants(k: int | None) -> list:
    """``(lowest(t), what the student's walk does)`` for the usual mistakes in the bounds of 2.2's walk
    with ``truncate = k`` (``None``: untruncated)."""
    keeps = ("-- truncate=k keeps the steps s = t, t-1, ..., max(0, t-k) (k+1 of them, step 0 included) for "
             "each output step t; range's stop is exclusive: range(t, max(0, t-k) - 1, -1)")
    if k is None:
        return [(lambda t: 1, "never reaches step 0: it stops at s = 1 (range(t, 0, -1) excludes its stop 0) "
                              "-- untruncated, the walk visits s = t, ..., 0: range(t, -1, -1)")]
    out = [(lambda t: 0, f"ignores truncate: it equals the untruncated gradient {keeps}"),
           (lambda t: max(0, t - k - 1), f"walks one step too far: with truncate={k} it equals the reference's "
                                         f"truncate={k + 1} {keeps}"),
           (lambda t: max(0, t - k) + 1, f"stops one step early: with truncate={k} it never visits s = max(0, t-{k}) "
                                         f"(range(t, max(0, t-{k}), -1) excludes its stop) {keeps}")]
    if k > 0:
        out.append((lambda t: max(0, t - k + 1), f"stops one step early: with truncate={k} it equals the "
                                                 f"reference's truncate={k - 1} {keeps}"))
    return out


def _recognise(student, reference, params, X, Y, h0, extra) -> str:
    """A common mistake recognised from the student's numbers, or "": an accumulation overwritten (=
    instead of +=), or a walk whose bounds are one step off (each variant of :func:`_walk_variants`
    computed by :func:`_walk` and compared with the student's gradients)."""
    got = _grads(student, params, X, Y, h0, **extra)
    if X.shape[0] > 1:
        terms = _step_terms(params, X, Y, h0)
        for name, g in zip(got.names(), got.arrays()):
            g = np.asarray(g)
            for t in (0, X.shape[0] - 1):
                if g.shape == terms[name][t].shape and np.allclose(g, terms[name][t], rtol=1e-7, atol=1e-12):
                    return (f"d{name} equals the term of time step {t} alone: it is overwritten (=) in the loop "
                            "instead of accumulated (+=) over the time steps")
    if reference is not rnn.bptt_quadratic:
        return ""
    for lowest, what in _walk_variants(extra.get("truncate")):
        if not _wrong_fields(got, _walk(params, X, Y, h0, lowest), 1e-9):
            return f"your walk {what}"
    return ""


def _changed_input(fn, params, X, Y, h0, extra) -> str:
    """Call ``fn`` on copies of the inputs; the name of the first one it changed in place ("" if none)."""
    args = {"params": params.copy(), "X": X.copy(), "Y": Y.copy(), "h0": None if h0 is None else h0.copy()}
    fn(args["params"], args["X"], args["Y"], args["h0"], **extra)
    for name, before in (("X", X), ("Y", Y), ("h0", h0)):
        if before is not None and not np.array_equal(args[name], before):
            return name
    for name, after, before in zip(params.names(), args["params"].arrays(), params.arrays()):
        if not np.array_equal(after, before):
            return f"params.{name}"
    return ""


def _check_grads(exercise: str, student, reference, cases, rtol: float, forbidden: dict | None = None, **kw) -> str:
    if not callable(student):
        raise ExerciseFailed(f"Exercise {exercise}: expected a function, got {type(student).__name__}")
    total = len(cases)
    for i, (params, X, Y, h0, extra) in enumerate(cases, start=1):
        label = f"T={X.shape[0]}, B={X.shape[1]}, nx={params.nx}, nh={params.nh}, ny={params.ny}"
        if extra:
            label += ", " + ", ".join(f"{k}={v}" for k, v in extra.items())
        try:
            changed = _changed_input(student, params, X, Y, h0, extra)
            if changed:
                raise ExerciseFailed(
                    f"Exercise {exercise} failed on case {i}/{total} ({label}):\n  your function changed its input "
                    f"'{changed}' in place; expected the inputs left as they were (the forward pass and other "
                    "callers still need them): work on copies or into new arrays")
            msg = diagnose_gradients(student, reference, params, X, Y, h0, rtol=rtol, **extra)
        except (NotImplementedError, ExerciseFailed):
            raise
        except Exception as exc:
            raise ExerciseFailed(f"Exercise {exercise} failed on case {i}/{total} ({label}):\n"
                                 f"  your function raised {type(exc).__name__}: {exc}") from exc
        if msg:
            try:
                known = _recognise(student, reference, params, X, Y, h0, extra)
            except Exception:
                known = ""
            if known:
                msg = known
            raise ExerciseFailed(f"Exercise {exercise} failed on case {i}/{total} ({label}):\n  {msg}")
    if forbidden:
        from .shortcuts import check_no_shortcut

        params, X, Y, h0, extra = cases[0]
        check_no_shortcut(exercise, student, forbidden, params.copy(), X.copy(), Y.copy(),
                          None if h0 is None else h0.copy(), **extra)
    return passed(exercise, total, total)


def check_bptt_linear(student) -> str:
    """Exercise 2.1: ``bptt_linear(params, X, Y, h0)`` -> ``RNNParams`` of gradients, one reverse sweep.

    Checks the gradients on 5 seeded problems (a wrong one is named with the first time step where it
    goes wrong), and the property the exercise teaches -- O(T) work -- by counting the matrix products
    that read ``Whh`` at T = 4, 8, 12 (:func:`whh_products`): a second difference of the counts of
    half a T² term or more (the double loop of 2.2 has 16) is rejected. Calls of the course's
    ``rnn.bptt_linear`` / ``rnn.bptt_quadratic`` are rejected."""
    cases = [(p, X, Y, h0, {}) for p, X, Y, h0 in gradient_cases(0)]
    with contextlib.redirect_stdout(io.StringIO()):
        line = _check_grads("2.1", student, rnn.bptt_linear, cases, rtol=1e-7,
                            forbidden={"rnn.bptt_linear": rnn.bptt_linear, "rnn.bptt_quadratic": rnn.bptt_quadratic})
    counts = whh_products(student)
    (t1, t2, _), (n1, n2, n3) = PRODUCT_TS, counts
    if n3 - 2 * n2 + n1 >= (t2 - t1) ** 2 // 2:
        raise ExerciseFailed(
            f"Exercise 2.1 failed:\n  your gradients are right, but the work grows like T², not T: your function "
            f"takes {', '.join(map(str, counts))} matrix products with Whh at T = "
            f"{', '.join(map(str, PRODUCT_TS))} -- more for every added step than for the one before, as the "
            "double loop of 2.2 does (it walks every output step's error back on its own).\n  Hint: one reverse "
            "sweep: carry dh_next = dpre_t Whh^T from step t to step t-1 and add it to dh there, so each step "
            "is visited once.")
    print(line)
    return line


#: 2.2's complexity probe: products with Whh counted at these T (equal steps, so that the second
#: difference of the counts isolates the T² term: 2 a h² for a T² + b T + c)
PRODUCT_TS = (4, 8, 12)


def whh_products(student, Ts=PRODUCT_TS, *, seed: int = 7) -> list[int]:
    """How many matrix products read ``Whh`` in one untruncated call ``student(params, X[:T], Y[:T], h0)``
    for each ``T`` in ``Ts`` (B = 2, nx = nh = ny = 3, float64; ``Whh`` wrapped with :func:`.core.counted`,
    so ``@``, ``np.dot``, ``.dot`` on it or on its transposes and copies count; a copy made with
    ``np.asarray``/``np.ascontiguousarray`` is a plain array and does not)."""
    rng = np.random.default_rng(seed)
    params, X, Y, h0 = random_problem(rng, max(Ts), 2, 3, 3, 3, dtype=np.float64)
    counts = []
    for T in Ts:
        p = rnn.RNNParams(Wxh=params.Wxh.copy(), Whh=counted(params.Whh.copy()), Why=params.Why.copy())
        n, _ = count_products(student, p, X[:T].copy(), Y[:T].copy(), h0.copy())
        counts.append(n)
    return counts


def _quadratic_walk(student) -> str:
    """Fail unless the products with ``Whh`` grow like T² (see :func:`check_bptt_quadratic`); the line that
    reports the counts, or "" when they cannot be seen."""
    counts = whh_products(student)
    (t1, t2, _), (n1, n2, n3) = PRODUCT_TS, counts
    step = t2 - t1
    if n3 - n2 <= step:           # at most one product per added step: the forward pass alone is visible
        return ""
    seen = f"{', '.join(map(str, counts))} at T = {', '.join(map(str, PRODUCT_TS))}"
    if n3 - 2 * n2 + n1 < step * step // 2:
        raise ExerciseFailed(
            f"Exercise 2.2 failed:\n  your gradients are right, but the work grows like T, not T²: your function "
            f"takes {seen.replace(' at', ' matrix products with Whh at')} -- the same number more for every added step (the "
            f"double loop's walks take T(T+1)/2 of them, {', '.join(str(t * (t + 1) // 2) for t in PRODUCT_TS)}, "
            "plus the forward pass's T). That is the O(T) sweep of 2.1.\n  Hint: for every output step t walk "
            "its own error back, s = t, t-1, ..., and push it through Whh at every step of every walk -- "
            "the exercise is to see the O(T²) cost that the sweep avoids.")
    return f"  matrix products with Whh: {seen} -- they grow like T² (T(T+1)/2 walk steps, plus T in the forward pass)"


def check_bptt_quadratic(student) -> str:
    """Exercise 2.2: ``bptt_quadratic(params, X, Y, h0, truncate=None)``, the WildML double loop.

    Checks the gradients untruncated and with ``truncate`` = 0, 1, 2 against the reference (a wrong
    walk's bounds are named: :func:`_walk_variants`), and the property the exercise teaches -- the
    O(T²) work -- by counting the matrix products that read ``Whh`` at T = 4, 8, 12
    (:func:`whh_products`): their second difference is 16 for the double loop's T(T+1)/2 walk steps and
    0 for the O(T) sweep, which is rejected however its numbers come out. Counts that show no more than
    one product per step (the forward pass alone, ``Whh`` copied into a plain array for the walk) are
    not judged. Calls of the course's ``rnn.bptt_quadratic`` / ``rnn.bptt_linear`` are rejected."""
    base = gradient_cases(1)
    cases = [(p, X, Y, h0, {}) for p, X, Y, h0 in base[:3]]
    cases += [(p, X, Y, h0, {"truncate": tr}) for (p, X, Y, h0), tr in zip(base[2:], (0, 1, 2))]
    with contextlib.redirect_stdout(io.StringIO()):
        line = _check_grads("2.2", student, rnn.bptt_quadratic, cases, rtol=1e-7,
                            forbidden={"rnn.bptt_quadratic": rnn.bptt_quadratic, "rnn.bptt_linear": rnn.bptt_linear})
    note = _quadratic_walk(student)
    print(line)
    if note:
        print(note)
    return line


LINEAR_TS = (50, 100, 200, 400)
QUADRATIC_TS = (12, 24, 48, 96)


SLOPE_TOL = 0.45  # how far 2.3's fitted slopes may be from 1 and 2


def _steadier(time_bptt, fn, params, X, Y, Ts, times, slope, runs: int = 3) -> np.ndarray:
    """``times`` again, if their slope misses ``slope``: up to ``runs`` more runs of the student's timer, each T
    keeping its smallest time. Another program that slowed one short run flattens the fit of a right timer;
    it cannot slow every run, while a wrong timer (a constant, a total) misses in every run alike."""
    for _ in range(runs):
        if abs(loglog_slope(Ts, times) - slope) <= SLOPE_TOL:
            break
        with backend.blas_threads(1):
            times = np.minimum(times, _student_times(time_bptt, fn, params, X, Y, Ts))
    return times


def _student_times(time_bptt, fn, params, X, Y, Ts) -> np.ndarray:
    try:
        out = time_bptt(fn, params, X, Y, list(Ts))
    except (NotImplementedError, ExerciseFailed):
        raise
    except Exception as exc:
        hint = (" -- did you slice both X and Y to the first T steps (X[:T], Y[:T])?"
                if isinstance(exc, ValueError) and ("Y" in str(exc) or "shape" in str(exc)) else "")
        raise ExerciseFailed(f"Exercise 2.3 failed:\n  your time_bptt raised {type(exc).__name__}: {exc}{hint}") from exc
    times = np.asarray(out, dtype=float).ravel()
    if times.shape != (len(Ts),):
        raise ExerciseFailed(f"Exercise 2.3 failed:\n  expected {len(Ts)} times (one per T in {list(Ts)}), got {times.size}")
    if not np.all(np.isfinite(times)) or np.any(times <= 0):
        raise ExerciseFailed(f"Exercise 2.3 failed:\n  every time must be a positive number of seconds, got {times.tolist()}")
    return times


def _running_total(backwards, longest_alone: float) -> bool:
    """Whether times measured for Ts given longest first add up: they grow at every step *and* the last one
    (the shortest T) is at least half the time one call with the longest T takes. A correct timer's last
    time is far smaller (1/8 of it for the linear sweep, 1/64 for the double loop): one disturbed
    measurement cannot make it a running total, as "the last time exceeds the first" alone did."""
    grows = all(b > a for a, b in zip(backwards, backwards[1:]))   # strictly: constant times are a wrong slope
    return bool(grows and backwards[-1] >= 0.5 * longest_alone)


#: 2.3's timing probe: the CPU time of the 1st, 2nd, 3rd, ... call for one T, in units of PROBE_UNIT_S
PROBE_UNITS = (12, 1, 8)
PROBE_UNIT_S = 0.004
PROBE_TS = (2, 3)


class TimingProbe:
    """Stands in for ``bptt`` in 2.3: ``probe(params, X, Y)`` busy-waits ``PROBE_UNITS[k] * unit`` seconds
    of CPU time on its ``k``-th call for a given ``T = len(X)`` (later calls: the last entry) and records
    each call's ``(wall, cpu)`` seconds in ``calls[T]``. Its calls take known, different times, so a
    best-of-3 (the 1-unit call) is told from a total (21 units), a mean (7) or one other call (12 or 8) by the
    value returned -- even when other programs stretch the fastest call's wall time several times over."""

    def __init__(self, unit: float = PROBE_UNIT_S, units=PROBE_UNITS):
        self.unit, self.units, self.calls = float(unit), tuple(units), {}

    def __call__(self, params, X, Y, *args, **kwargs):
        import time as _time

        made = self.calls.setdefault(int(np.shape(X)[0]), [])
        cpu = self.units[min(len(made), len(self.units) - 1)] * self.unit
        w0, c0 = _time.perf_counter(), _time.process_time()
        while _time.process_time() - c0 < cpu:
            pass
        made.append((_time.perf_counter() - w0, _time.process_time() - c0))


def _what_was_returned(r: float, calls: list) -> str:
    """What a returned time ``r`` is, given the probe's ``(wall, cpu)`` per call: a total, one call that is not
    the fastest, or a mean -- matched first on the CPU clock (exact for a busy-wait), then on the wall clock."""
    if r >= 0.9 * sum(c for _, c in calls):
        return "their total: you added the calls up"
    for k, rel in ((1, 0.05), (0, 0.10)):          # CPU times first, then wall times
        times = [c[k] for c in calls]
        fastest = times.index(min(times))
        for i, t in enumerate(times):
            if i != fastest and abs(r - t) <= rel * t:
                return f"the time of call {i + 1}, not the fastest"
        if abs(r - sum(times) / len(times)) <= rel * sum(times) / len(times):
            return "about their mean"
    return "not the fastest of them"


def best_of_calls(time_bptt, params, X, Y) -> None:
    """Fail unless, for every T, ``time_bptt`` calls bptt at least 3 times and returns the best of the calls:
    through a :class:`TimingProbe`, a returned time is accepted when it is at most 1.1x the shortest call's
    wall time (+ 1 ms) -- any clock's reading of the fastest call is -- and otherwise named: a total, one other
    call, or a mean (:func:`_what_was_returned`)."""
    probe = TimingProbe()
    got = _student_times(time_bptt, probe, params, X, Y, PROBE_TS)
    for T, r in zip(PROBE_TS, got):
        calls = probe.calls.get(T, [])
        if len(calls) < 3:
            raise ExerciseFailed(
                f"Exercise 2.3 failed:\n  for T = {T} your time_bptt called bptt {len(calls)} time(s): take the best "
                "of 3 calls (the fastest one) -- one call catches whatever else the machine did at that moment")
        walls = [w for w, _ in calls]
        if r <= 1.1 * min(walls) + 1e-3:
            continue
        what = _what_was_returned(r, calls)
        raise ExerciseFailed(
            f"Exercise 2.3 failed:\n  the check gave your time_bptt a stand-in for bptt whose calls take known, "
            f"different times: for T = {T} your function called it {len(calls)} times, taking "
            f"{', '.join(f'{w:.4f}' for w in walls)} s, and returned {r:.4f} s -- {what}. Best of 3 is the "
            f"shortest call ({min(walls):.4f} s here): keep best = min(best, t1 - t0) over the repeats")


def check_complexity(time_bptt, *, batch: int = 4, n: int = 16) -> str:
    """Exercise 2.3: ``time_bptt(bptt, params, X, Y, Ts) -> list of seconds``, the time of
    ``bptt(params, X[:T], Y[:T])`` for each T in ``Ts``. The check times the course's two BPTT
    functions with it and fits log-log slopes: ≈1 for the sweep, ≈2 for the double loop. It also
    checks that the times are in seconds (against its own timing of the longest run), that each
    T is timed on its own (Ts given longest first must give decreasing times, not a running total),
    and the timing discipline the exercise asks for -- the best of 3 calls, told from their total or
    mean by a stand-in whose calls take known, different times (:func:`best_of_calls`). Building on the
    course's timing helpers (``timing.measure``, ``timing.compare``) is rejected: the loop is the exercise."""
    import time as _time

    rng = np.random.default_rng(0)
    params = rnn.init_params(n, n, n, seed=0)
    Tmax = max(max(LINEAR_TS), max(QUADRATIC_TS))
    X = rng.uniform(-1, 1, (Tmax, batch, n)).astype(np.float32)
    Y = rng.uniform(-1, 1, (Tmax, batch, n)).astype(np.float32)
    slopes = {}
    for name, fn, Ts, slope in (("bptt_linear", rnn.bptt_linear, LINEAR_TS, 1.0),
                                ("bptt_quadratic", rnn.bptt_quadratic, QUADRATIC_TS, 2.0)):
        with backend.blas_threads(1):  # tiny matrices: threads only add noise
            runs = [_student_times(time_bptt, fn, params, X, Y, Ts) for _ in range(2)]
            times = np.minimum(*runs)  # best of two: less noise
            backwards = _student_times(time_bptt, fn, params, X, Y, Ts[::-1])
            ref = []
            for _ in range(3):
                t0 = _time.perf_counter()
                fn(params, X[:Ts[-1]], Y[:Ts[-1]])
                ref.append(_time.perf_counter() - t0)
        ratio = times[-1] / min(ref)
        if ratio > 30:
            raise ExerciseFailed(
                f"Exercise 2.3 failed ({name}):\n  your time for T = {Ts[-1]} is {times[-1]:.4g}, about {ratio:.0f}x what "
                f"one call takes ({min(ref):.2e} s): return seconds per call -- not milliseconds, and not a total "
                "over several repeats")
        if ratio < 1 / 30:
            raise ExerciseFailed(
                f"Exercise 2.3 failed ({name}):\n  your time for T = {Ts[-1]} is {times[-1]:.3g}, about {1 / ratio:.0f}x "
                f"less than one call takes ({min(ref):.2e} s): time the whole call bptt(params, X[:T], Y[:T]), in seconds")
        if _running_total(backwards, min(ref)):
            raise ExerciseFailed(
                f"Exercise 2.3 failed ({name}):\n  with Ts = {list(Ts[::-1])} (longest first) your times grow at every "
                f"step ({', '.join(f'{t:.3g}' for t in backwards)} s), and the last, for T = {Ts[0]} alone, is "
                f"{backwards[-1]:.3g} s -- at least half of what one call with T = {Ts[-1]} takes ({min(ref):.3g} s, "
                "timed by the check): expected a time far below that, found a running total. Start the clock afresh "
                "for every T.")
        times = _steadier(time_bptt, fn, params, X, Y, Ts, times, slope)
        with contextlib.redirect_stdout(io.StringIO()):  # one success line for the whole exercise
            check_slope(f"2.3 ({name})", Ts, times, slope, tol=SLOPE_TOL, what="time",
                        hint=f"time {name}(params, X[:T], Y[:T]) for each T (take the best of a few "
                             "repeats to reduce noise); a slope near 0 means the same T is timed every time")
        slopes[name] = (loglog_slope(Ts, times), slope)
    best_of_calls(time_bptt, params, X, Y)
    from ...core import timing
    from .shortcuts import check_no_shortcut

    check_no_shortcut("2.3", time_bptt, {"timing.measure": timing.measure, "timing.compare": timing.compare},
                      TimingProbe(unit=1e-4), params, X, Y, list(PROBE_TS),
                      hint="write the loop yourself: t0 = time.process_time(); bptt(...); keep the smallest "
                           "time.process_time() - t0 of 3 calls.")
    line = passed("2.3", 2, 2)
    print("  slopes measured: " + ", ".join(f"{name} {got:.2f} (expected {want:g} +- 0.45)"
                                            for name, (got, want) in slopes.items()))
    return line
