"""Checks for worksheet 12 (which parallelism when): predict the fastest method with the cost model,
then measure the candidates on this machine and compare prediction, measurement and the model.

Each exercise gives a problem description and its candidate methods. The student's function takes
the description's numbers and a :class:`~course_lib.experiments.cost_model.Machine` and returns the
*name* of the method the model predicts fastest. The check has two separate parts:

1. **Graded, deterministic**: it calls the function on the stated problem and on three other problems,
   each on a *preset* machine built from fixed numbers (:data:`PRESETS`: a 2-core laptop, a 32-core
   server with slow cores and fast memory, the seeds' Xeon Phi) -- never on a measurement of this
   machine, so the check passes or fails the same way on every run and every computer. The model's
   answers differ between the cases, so a hard-coded answer fails;
2. it rejects a non-string or unknown method, a method that cannot apply to the problem (with the
   model's reason), a method that is not one of the candidates, and a method that is not the model's
   first choice (naming the model's choice and both predicted times) -- and names the modelling slip
   behind a wrong answer where one explains it (:data:`SLIPS`: training priced as inference, a GRU
   priced as an LSTM, a quasi-DEER win ignored);
3. **Live, never graded**: then (``measure=True``) it runs the candidates on the stated problem with the course's own code,
   timed with :func:`course_lib.core.timing.compare`, and keeps a report: predicted vs measured per
   method, whether the measured fastest is the model's first choice, and if not why (computed:
   the noise of the run, a near tie, what the run did that the model assumed otherwise -- iterations,
   cores -- or the method the model mispredicts most). The report is printed by :func:`report`
   (a separate cell, since measured numbers differ from run to run); the pass line is stable.

The student is never failed for the machine's noise: the pass depends only on the prediction.

Property checked (12.1-12.3): the answer is the cost model's ranking of the stated candidates for the problem
built from the arguments, on the machine passed in -- four problems on three preset machines whose first
choices differ, so a hard-coded answer, a global or measured machine instead of ``machine``, a problem priced
as the wrong kind or mode, or a candidate left out is named; a function that calls the grader's own
:func:`model_choice` is rejected (:mod:`.shortcuts`).
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from ...core import backend, timing
from ...experiments import cost_model as cm
from .core import ExerciseFailed, passed

__all__ = ["PROBLEMS", "Spec", "Measurement", "check_predict_a", "check_predict_b", "check_predict_c", "model_choice",
           "measure_candidates", "explain", "report"]

LAPTOP = "a 2-core laptop (preset)"
SERVER = "a 32-core server with slow cores and fast memory (preset)"
PHI = "the 61-core Xeon Phi of seed 000 (preset, assumed numbers)"


def _calls(rnn: float, gru: float, lstm: float) -> dict:
    return {(k, md): v * (1.1 if md == "training" and k == "lstm" else 1.0)
            for k, v in (("rnn", rnn), ("gru", gru), ("lstm", lstm)) for md in ("inference", "training")}


_KERNELS = {("gru", "inference"): 25.0, ("gru", "training"): 14.0, ("lstm", "inference"): 50.0,
            ("lstm", "training"): 50.0}
_FIXED = {"*": "preset: fixed numbers (not measured), so the graded check is the same on every run"}

#: The graded part's machines: deterministic, built from fixed constants (cores, SIMD lanes, GEMM per core
#: and all cores, GEMV, stream 1 / all cores GB/s, call, hand-off, region, dependent step; per-call prices
#: and cell-kernel rates of the course's code per kind).
PRESETS = {
    LAPTOP: cm.Machine(LAPTOP, 2, 8, 100.0, 190.0, 30.0, 20.0, 30.0, 0.3e-6, 20e-6, 5e-6, 4e-9,
                       call_costs=_calls(0.6e-6, 0.5e-6, 0.9e-6), kernel_gflops=_KERNELS, source=_FIXED),
    SERVER: cm.Machine(SERVER, 32, 16, 60.0, 1600.0, 30.0, 60.0, 200.0, 1.0e-6, 40e-6, 15e-6, 6e-9,
                       call_costs=_calls(2.0e-6, 2.0e-6, 3.0e-6),
                       kernel_gflops={k: 0.6 * v for k, v in _KERNELS.items()}, source=_FIXED),
    PHI: cm.Machine.preset("xeon_phi"),
}


@dataclasses.dataclass(frozen=True)
class Spec:
    """One worksheet problem: how to build the model's Problem from the description's numbers, the
    candidates, the stated problem and the other (problem, machine) cases the check also asks about."""

    exercise: str
    letter: str
    what: str
    candidates: tuple
    make: Callable
    primary: dict
    variants: tuple  # ((kwargs, machine label), ...)

    def problem(self, kwargs: dict) -> cm.Problem:
        return self.make(**kwargs)


PROBLEMS = {
    "12.1": Spec("12.1", "a", "inference of a softmax RNN (chapter 07): `layers` layers of nh units, nh inputs and "
                              "nh outputs per step, batch sequences of T steps",
                 ("batched", "threads", "wavefront"),
                 lambda batch, T, nh, layers: cm.Problem("rnn", "inference", batch=batch, T=T, nh=nh, layers=layers,
                                                         ny=nh),
                 dict(batch=256, T=32, nh=64, layers=2),
                 ((dict(batch=2, T=32, nh=64, layers=2), LAPTOP),
                  (dict(batch=2, T=64, nh=1024, layers=8), SERVER),
                  (dict(batch=256, T=32, nh=64, layers=2), PHI))),
    "12.2": Spec("12.2", "b", "a linear recurrence h_t = a_t h_{t-1} + x_t (chapter 08) with nh channels over T steps",
                 ("sequential", "channels", "chunked"),
                 lambda T, nh: cm.Problem("linear", "inference", batch=1, T=T, nh=nh),
                 dict(T=1 << 20, nh=1),
                 ((dict(T=1 << 20, nh=64), LAPTOP),
                  (dict(T=1 << 16, nh=8), SERVER),
                  (dict(T=1024, nh=16384), PHI))),
    "12.3": Spec("12.3", "c", "training (forward and gradient) of a GRU (chapters 10-11) with nh units on batch "
                              "sequences of T steps",
                 ("batched", "mgrit", "newton", "quasi"),
                 lambda batch, T, nh: cm.Problem("gru", "training", batch=batch, T=T, nh=nh),
                 dict(batch=1, T=1024, nh=32),
                 ((dict(batch=16, T=2048, nh=128), PHI),      # priced as an LSTM: mgrit
                  (dict(batch=2, T=2048, nh=8), LAPTOP),      # priced as inference: batched
                  (dict(batch=1, T=4096, nh=48), SERVER))),   # quasi-DEER wins (newton without it)
}
PRIMARY = LAPTOP   # the machine of every stated problem


def _slip_problem(kind=None, mode=None, ny=None):
    def make(spec, kwargs):
        p = spec.problem(kwargs)
        return cm.Problem(kind or p.kind, mode or p.mode, batch=p.batch, T=p.T, nh=p.nh, layers=p.layers, nx=p.nx,
                          ny=p.ny if ny is None else ny)
    return make


#: Modelling slips the checks name: exercise -> ((name, how it builds the problem, candidates left out), ...)
SLIPS = {
    "12.3": (("training priced as inference (mode='inference'): the gradient pass roughly triples the "
              "per-step calls of the batched GRU, but adds only about one iteration to DEER",
              _slip_problem(mode="inference"), ()),
             ("a GRU priced as an LSTM (kind='lstm'): the course's LSTM runs a compiled cell -- few calls per "
              "step -- while its GRU issues many numpy calls per step", _slip_problem(kind="lstm"), ()),
             ("a quasi-DEER win ignored (quasi left out of the ranking): its diagonal Jacobians move nh "
              "numbers per step instead of nh^2", _slip_problem(), ("quasi",))),
}


_REPORTS: dict = {}


# --------------------------------------------------------------------------- the model's answer
def _machine(machine) -> cm.Machine:
    if machine is None:
        return cm.Machine.measure(quick=timing.budget() == "small")
    if not isinstance(machine, cm.Machine):
        raise TypeError(f"machine: expected a cost_model.Machine (or None: this machine, measured), "
                        f"got {type(machine).__name__}")
    return machine


def _resolve(label: str, here: cm.Machine | None = None) -> cm.Machine:
    """The preset machine named ``label`` (``here`` is accepted and ignored: the graded part never
    measures this machine)."""
    return PRESETS[label]


def model_choice(exercise: str, kwargs: dict | None = None, machine: cm.Machine | None = None, *, problem=None,
                 leave_out=()):
    """``(first choice, {candidate: predicted seconds})`` of the model for exercise ``exercise``'s problem
    (the stated one unless ``kwargs``; ``problem`` overrides the Problem built from them) on ``machine``
    (default: the stated problem's preset machine, :data:`PRIMARY` -- deterministic)."""
    spec = PROBLEMS[exercise]
    machine = PRESETS[PRIMARY] if machine is None else _machine(machine)
    prob = spec.problem(spec.primary if kwargs is None else kwargs) if problem is None else problem
    adv = cm.advise(prob, machine, methods=[c for c in spec.candidates if c not in leave_out])
    return adv[0].method, {a.method: a.seconds for a in adv}


def _slip_answers(spec: Spec, cases: list) -> dict:
    """``{slip name: [its answer on each case]}`` (the model's answers under each slip of :data:`SLIPS`)."""
    out = {}
    for name, make, leave_out in SLIPS.get(spec.exercise, ()):
        out[name] = [model_choice(spec.exercise, kw, PRESETS[label], problem=make(spec, kw), leave_out=leave_out)[0]
                     for kw, label in cases]
    return out


def _named_slip(spec: Spec, cases: list, answers: list) -> str | None:
    """The slip whose answers equal the student's on every case so far (the last one wrong), or None."""
    for name, their in _slip_answers(spec, cases[:len(answers)]).items():
        if their == answers:
            return name
    return None


def _fmt(s: float) -> str:
    return timing.fmt_seconds(s)


def _args(kwargs: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in kwargs.items())


def _validate_answer(spec: Spec, got, prob: cm.Problem, mach: cm.Machine, where: str) -> str:
    ex = f"Exercise {spec.exercise} failed on {where}"
    cands = ", ".join(repr(c) for c in spec.candidates)
    if isinstance(got, cm.Advice):
        raise ExerciseFailed(f"{ex}:\n  your function returned an Advice object; return the method's name, a string\n"
                             f"  Hint: advise(...) returns a ranked list of Advice; its first entry's .method is "
                             f"the name")
    if not isinstance(got, str):
        raise ExerciseFailed(f"{ex}:\n  expected the method's name as a string (one of {cands}), got "
                             f"{type(got).__name__} {got!r}\n  Hint: return a name such as 'batched', not a time, "
                             f"a Cost or a list")
    if got not in cm.METHODS:
        raise ExerciseFailed(f"{ex}:\n  {got!r} is not a method of the cost model; this problem's candidates are "
                             f"{cands} (all methods: cost_model.METHODS)\n  Hint: spelling -- the model's names "
                             f"are lower case, e.g. 'quasi', 'chunked'")
    why = cm.applicable(prob, mach)[got]
    if why is not None:
        raise ExerciseFailed(f"{ex}:\n  {got!r} cannot apply to this problem ({prob.describe()}): {why}\n"
                             f"  Hint: choose among the candidates {cands}")
    if got not in spec.candidates:
        raise ExerciseFailed(f"{ex}:\n  {got!r} applies, but it is not one of this problem's candidates ({cands})\n"
                             f"  Hint: rank only the candidates: advise(problem, machine, methods=[...])")
    return got


def _call(spec: Spec, fn, kwargs: dict, mach: cm.Machine, where: str):
    try:
        return fn(**kwargs, machine=mach)
    except NotImplementedError:
        raise
    except Exception as exc:
        raise ExerciseFailed(f"Exercise {spec.exercise} failed on {where}:\n  your function raised "
                             f"{type(exc).__name__}: {exc}\n  Hint: it is called as "
                             f"fn({_args(kwargs)}, machine=...)") from exc


def _check_prediction(exercise: str, fn) -> tuple[Spec, str, int]:
    """The graded part: the student's function on every case, each on its preset machine (no measurement)."""
    spec = PROBLEMS[exercise]
    if not callable(fn):
        raise ExerciseFailed(f"Exercise {exercise}: expected a function, got {type(fn).__name__}")
    cases = [(spec.primary, PRIMARY)] + list(spec.variants)
    first_answer = None
    answers: list = []
    for i, (kwargs, label) in enumerate(cases):
        mach = PRESETS[label]
        prob = spec.problem(kwargs)
        where = (f"problem ({spec.letter}) as stated, {_args(kwargs)}, on {label}" if i == 0 else
                 f"a second problem, case {i + 1}/{len(cases)} ({_args(kwargs)}) on {label}")
        got = _validate_answer(spec, _call(spec, fn, kwargs, mach, where), prob, mach, where)
        answers.append(got)
        best, secs = model_choice(exercise, kwargs, mach)
        if i == 0:
            first_answer = got
        if secs[got] <= secs[best] * (1 + 1e-9):
            continue
        msg = (f"Exercise {exercise} failed on {where}:\n  you predicted {got!r}, but the model's first choice is "
               f"{best!r}: the model predicts {_fmt(secs[best])} for {best!r} and {_fmt(secs[got])} for {got!r} "
               f"({secs[got] / secs[best]:.3g}x slower)")
        slip = _named_slip(spec, cases, answers)
        hard = i > 0 and got == first_answer
        ignores = label != PRIMARY and got == model_choice(exercise, kwargs, PRESETS[PRIMARY])[0]
        if slip is not None:
            msg += (f"\n  a modelling slip: {slip} -- your answers so far are exactly the model's under that slip"
                    + (f" (or a hard-coded {got!r})" if hard and len(set(answers)) == 1 else "")
                    + f"\n  Hint: build the Problem from the description ({spec.what}) and rank all the "
                      f"candidates {', '.join(map(repr, spec.candidates))}")
            if ignores and not hard:
                msg += ("\n  (your answer is also the model's choice for this problem on the stated problem's "
                        "machine, not on the machine you were given: use the `machine` argument)")
        elif hard:
            msg += f"\n  your function returned {got!r} again, as for problem ({spec.letter}) as stated"
            if ignores:
                msg += (f", and {got!r} is the model's choice for this problem on this machine, not on the machine "
                        f"you were given -- is the answer hard-coded, or does your function ignore its machine?\n"
                        f"  Hint: compute it from the arguments, and use the `machine` argument, not "
                        f"Machine.measure() or a global machine")
            else:
                msg += (" -- is the answer hard-coded?\n  Hint: compute it from the arguments: build the Problem "
                        "from them and ask the model (advise or predict) on the machine you are given")
        elif ignores:
            msg += ("\n  your answer is the model's choice for this problem on this machine, not on the machine you "
                    "were given\n  Hint: use the `machine` argument, not Machine.measure() or a global machine")
        else:
            msg += (f"\n  Hint: build the Problem from the description ({spec.what}): kind, mode, batch, T, nh, "
                    f"layers, ny -- then rank the candidates with advise(problem, machine, methods=[...]) or "
                    f"cost_model.predict(method, problem, machine).seconds")
        raise ExerciseFailed(msg)
    return spec, first_answer, len(cases)


# --------------------------------------------------------------------------- measuring the candidates
@dataclasses.dataclass
class Measurement:
    """The candidates run on one problem: ``comparison`` (core.timing.compare), the options each run used
    that the model's defaults may differ from (``observed``: P, iters), and the model's predictions."""

    exercise: str
    problem: cm.Problem
    machine: cm.Machine
    comparison: timing.Comparison
    predicted: dict
    observed: dict

    @property
    def medians(self) -> dict:
        return {m: t.median for m, t in self.comparison.timings.items()}

    @property
    def fastest(self) -> str:
        med = self.medians
        return min(med, key=med.get)


def _runners(exercise: str, kwargs: dict, P: int) -> tuple[dict, dict]:
    """Zero-argument callables per candidate (the course's own code) and the options they use."""
    if exercise == "12.1":
        from ...models.softmax_rnn import init_params
        from ...parallel import inference

        B, T, H, L = kwargs["batch"], kwargs["T"], kwargs["nh"], kwargs["layers"]
        params = init_params(H, H, H, layers=L, seed=0)
        X = np.random.default_rng(1).standard_normal((T, B, H)).astype(np.float32)
        run = {"batched": lambda: inference.predict(params, X, method="batched"),
               "threads": lambda: inference.predict(params, X, method="threads", threads=P),
               "wavefront": lambda: inference.predict(params, X, method="wavefront", threads=P)}
        return run, {"threads": {"P": P}, "wavefront": {"P": P}}
    if exercise == "12.2":
        from ...algorithms import scan

        a, x, h0 = scan.random_problem(kwargs["T"], kwargs["nh"], seed=0)
        out = np.empty_like(x)
        run = {"sequential": lambda: scan.linear_recurrence(a, x, h0, out=out),
               "channels": lambda: scan.linear_recurrence(a, x, h0, method="channels", out=out),
               "chunked": lambda: scan.linear_recurrence(a, x, h0, method="chunked", out=out)}
        return run, {"channels": {"P": P}, "chunked": {"P": P}}
    from ...models import gru
    from ...parallel import deer

    B, T, H = kwargs["batch"], kwargs["T"], kwargs["nh"]
    p = gru.init_params(H, H, seed=0)
    X = np.random.default_rng(0).standard_normal((T, B, H)).astype(np.float32)
    # the gradient of sum(H): dense and normal (a one-hot last step makes the backward a product chain that goes
    # subnormal, ~13x slower on CPUs that handle subnormals in microcode: cost_model.execute.upstream)
    dH = np.ones((T, B, H), np.float32)
    mg = dict(m=4, levels=2, relax="FCF", max_iter=30, tol=1e-5, threads=P)
    its: dict = {}

    def serial():
        Hs = gru.gru_forward(p, X, implicit=True)
        gru.gru_backward(p, X, Hs, dH, implicit=True)

    def mgrit():
        Hs, hf = gru.gru_forward(p, X, implicit=True, method="mgrit", return_history=True, **mg)
        hb = gru.gru_backward(p, X, Hs, dH, implicit=True, method="mgrit", return_history=True, **mg)[-1]
        its["mgrit"] = max(1, round((len(hf) + len(hb)) / 2))

    def newton(method):
        def run():
            Hs, hist = deer.gru_forward(p, X, method=method, implicit=True, tol=1e-5, return_history=True)
            deer.gru_gradient(p, X, dH, H=Hs, method=method, implicit=True)
            its[method] = max(1, len(hist) - 1)
        return run

    run = {"batched": serial, "mgrit": mgrit, "newton": newton("newton"), "quasi": newton("quasi")}
    # numpy's element-wise passes of DEER run on one core; MGRIT's levels on P threads
    return run, {"mgrit": {"P": P, "iters": its}, "newton": {"P": 1, "iters": its}, "quasi": {"P": 1, "iters": its}}


def measure_candidates(exercise: str, machine: cm.Machine | None = None, *, repeat: int | None = None) -> Measurement:
    """Run exercise ``exercise``'s candidates on its stated problem with ``core.timing.compare`` (interleaved,
    one process) and predict each with the model on ``machine``."""
    if exercise not in PROBLEMS:
        raise ValueError(f"exercise: expected one of {sorted(PROBLEMS)}, got {exercise!r}")
    spec = PROBLEMS[exercise]
    machine = _machine(machine)
    repeat = timing.scaled(5, 2) if repeat is None else repeat
    P = backend.cpu_count()
    run, opts = _runners(exercise, spec.primary, P)
    cmp = timing.compare(repeat=repeat, **run)
    observed = {}
    for m, o in opts.items():
        o = dict(o)
        if isinstance(o.get("iters"), dict):
            o["iters"] = o["iters"][m]
        observed[m] = o
    _, predicted = model_choice(exercise, None, machine)
    return Measurement(exercise, spec.problem(spec.primary), machine, cmp, predicted, observed)


def _assumed_vs_observed(meas: Measurement) -> list[str]:
    out = []
    for m, o in meas.observed.items():
        if "iters" in o:
            assumed = cm.MGRIT_ITERS if m == "mgrit" else cm.DEER_ITERS[m]
            if o["iters"] != assumed:
                out.append(f"{m} took {o['iters']} iterations (the model assumed {assumed})")
        if "P" in o and o["P"] != meas.machine.cores:
            out.append(f"{m} ran on {o['P']} core{'s' if o['P'] != 1 else ''} (the model assumed "
                       f"{meas.machine.cores})")
    return out


def explain(meas: Measurement, choice: str) -> str:
    """Whether the measured fastest is the model's first choice ``choice``, and if not why (computed)."""
    med, fast = meas.medians, meas.fastest
    if fast == choice:
        rest = sorted((m for m in med if m != fast), key=med.get)
        nxt = f" ({med[rest[0]] / med[fast]:.2g}x ahead of {rest[0]})" if rest else ""
        line = f"The measurement agrees: the model's first choice, {choice}, was the fastest here{nxt}."
        if not meas.comparison.noise.ok:
            line += " (The run was noisy: " + "; ".join(meas.comparison.noise.reasons) + ".)"
        return line
    head = f"The measured fastest is {fast}, not the model's first choice {choice}: "
    if not meas.comparison.noise.ok:
        return head + "no conclusion -- the run was unreliable: " + "; ".join(meas.comparison.noise.reasons) + "."
    close = med[choice] / med[fast]
    if close < 1.1:
        return head + (f"they ran within {close:.2f}x of each other, closer than the model (or one run) can tell "
                       f"apart.")
    diffs = _assumed_vs_observed(meas)
    redo = {m: cm.predict(m, meas.problem, meas.machine, **meas.observed.get(m, {})).seconds for m in med}
    if diffs and min(redo, key=redo.get) == fast:
        return head + ("the run differed from the model's assumptions -- " + "; ".join(diffs)
                       + f" -- and with what the run actually did the model picks {fast} too.")
    err = {m: max(redo[m] / med[m], med[m] / redo[m]) for m in med}
    worst = max(err, key=err.get)
    part = cm.predict(worst, meas.problem, meas.machine, **meas.observed.get(worst, {})).bottleneck
    why = (f"the model is off by {err[worst]:.1f}x for {worst} (predicted {_fmt(redo[worst])}, measured "
           f"{_fmt(med[worst])}; its largest part in the model: {part}); the predicted ratio {choice}/{fast} is "
           f"{redo[choice] / redo[fast]:.2f}, the measured {close:.2f}")
    if diffs:
        why += "; the run also differed from the model's assumptions: " + "; ".join(diffs)
    if not meas.machine.noise.ok:
        why += ("; and the machine's own numbers were measured while it was busy ("
                + "; ".join(meas.machine.noise.reasons) + "), so the predictions inherit that")
    return head + why + "."


def _report_text(meas: Measurement, student: str) -> str:
    spec = PROBLEMS[meas.exercise]
    best = min(meas.predicted, key=meas.predicted.get)
    med = meas.medians
    w = max(len(m) for m in med)
    lines = [f"Exercise {meas.exercise} · problem ({spec.letter}): {meas.problem.describe()}, on this machine "
             f"({meas.machine.cores} cores)",
             f"  {'method':<{w}}  {'model':>10}  {'measured':>10}"]
    for m in sorted(med, key=meas.predicted.get):
        marks = []
        if m == best:
            marks.append("the model's first choice")
        if m == student:
            marks.append("your prediction")
        if m == meas.fastest:
            marks.append("measured fastest")
        lines.append(f"  {m:<{w}}  {_fmt(meas.predicted[m]):>10}  {_fmt(med[m]):>10}"
                     + (f"   <- {', '.join(marks)}" if marks else ""))
    lines.append("  " + explain(meas, best))
    return "\n".join(lines)


def _exercise(exercise: str, fn, machine, measure: bool) -> str:
    spec, answer, n = _check_prediction(exercise, fn)  # graded: preset machines only, deterministic
    from .shortcuts import check_no_shortcut   # the grader's own answer is not the model's API

    check_no_shortcut(exercise, fn, {"which_checks.model_choice": model_choice}, **spec.primary,
                      machine=PRESETS[PRIMARY],
                      hint="build the Problem from the description and ask the cost model yourself "
                           "(cost_model_exp.advise or cost_model_exp.predict), as the statement says.")
    if measure:  # live, never graded: this machine measured, the candidates run, a report kept
        here = _machine(machine)
        try:
            live = _call(spec, fn, spec.primary, here, f"problem ({spec.letter}) as stated, on this machine")
        except ExerciseFailed:
            live = answer
        meas = measure_candidates(exercise, here)
        _REPORTS[exercise] = _report_text(meas, live if isinstance(live, str) else answer)
    return passed(exercise, n, n)


def check_predict_a(predict_a, machine: cm.Machine | None = None, *, measure: bool = True) -> str:
    """Exercise 12.1: ``predict_a(batch, T, nh, layers, machine) -> method name``: the model's fastest of
    batched / threads / wavefront for softmax-RNN inference. Then measures them (see :func:`report`)."""
    return _exercise("12.1", predict_a, machine, measure)


def check_predict_b(predict_b, machine: cm.Machine | None = None, *, measure: bool = True) -> str:
    """Exercise 12.2: ``predict_b(T, nh, machine)``: sequential / channels / chunked for a linear recurrence."""
    return _exercise("12.2", predict_b, machine, measure)


def check_predict_c(predict_c, machine: cm.Machine | None = None, *, measure: bool = True) -> str:
    """Exercise 12.3: ``predict_c(batch, T, nh, machine)``: batched / mgrit / newton / quasi for GRU training."""
    return _exercise("12.3", predict_c, machine, measure)


def report(exercise: str) -> None:
    """Print the measurement of exercise ``exercise`` ('12.1' ...) kept by its last passing check."""
    if exercise not in PROBLEMS:
        raise ValueError(f"exercise: expected one of {sorted(PROBLEMS)}, got {exercise!r}")
    text = _REPORTS.get(exercise)
    if text is None:
        text = (f"Exercise {exercise}: no measurement yet -- it runs when the check above passes "
                f"(your prediction comes first).")
    print(text)
