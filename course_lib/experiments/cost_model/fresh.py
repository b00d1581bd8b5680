"""The advisor on problems it has never seen (experiments folder, chapter 12): :func:`fresh_problems` draws
problems at random (fixed seed; none is a chapter configuration), :func:`check_advisor` predicts every
method :func:`.execute.run` can execute on each, measures them all (:func:`.execute.measure`, interleaved)
and reports, per problem, whether the advisor's first trusted choice was the measured fastest or within
1.25x of it -- an :class:`AdvisorCheck` with the predicted-vs-measured table and the hit rate.

A machine's run can be kept (``benchmarks/which.py --record DIR``): :func:`save_record` writes its constants
(:meth:`.machine.Machine.save`, ``machine.json``) and its hold-out and fresh-problem tables (``record.json``), and
:func:`replay` reads them back and asks today's model and advisor again -- predictions from the saved constants,
against the times measured there -- so the advisor is checked on every machine ever recorded, not only this one.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass

import numpy as np

from ...core import timing
from ...core.validate import check_choice, check_float, check_int, check_positive_int, check_repeat, read_json
from .advice import advise, first_choice
from .execute import ONE_THREAD, measure, runnable
from .machine import Machine
from .model import predict
from .problem import Problem

__all__ = ["WITHIN", "fresh_problems", "FreshResult", "AdvisorCheck", "check_advisor", "save_record", "load_record",
           "replay", "RECORD_FORMAT"]

RECORD_FORMAT = "course_lib cost_model which record, v1"

WITHIN = 1.25   # a first choice within this factor of the measured fastest counts as a hit
_SKIP = ("mpi", "cuda_batched", "cuda_chunked")  # other processes / devices: not in one interleaved timing


def fresh_problems(n: int = 8, *, seed: int = 0, scale: float = 1.0) -> list:
    """``n`` random problems (``seed`` fixes them) of every kind, small enough that all their methods
    run in well under a second each (``scale`` multiplies T). Sizes are drawn log-uniformly."""
    n = check_positive_int(n, "n", high=1000)
    rng = np.random.default_rng(check_int(seed, "seed", low=0))
    scale = check_float(scale, "scale", low=0.0, high=1e4, low_inclusive=False)
    kinds = ["rnn", "gru", "lstm", "linear"]
    out, first = [], int(rng.integers(4))
    for i in range(n):
        kind = kinds[(i + first) % 4]  # every kind in every 4 draws
        mode = "training" if kind in ("gru", "lstm", "linear") and rng.random() < 0.3 else "inference"
        logu = lambda lo, hi: int(round(np.exp(rng.uniform(np.log(lo), np.log(hi)))))  # noqa: E731
        if kind == "linear":
            p = Problem("linear", mode, batch=logu(1, 8), T=int(logu(2000, 60000) * scale), nh=logu(1, 64))
        elif kind == "rnn":
            p = Problem("rnn", "inference", batch=logu(2, 48), T=int(logu(8, 48) * scale), nh=logu(16, 192),
                        layers=int(rng.integers(1, 4)), ny=logu(4, 64))
        else:
            nh = logu(4, 24) if mode == "inference" and kind == "gru" else logu(8, 96)
            p = Problem(kind, mode, batch=logu(2, 16), T=int(logu(32, 256) * scale), nh=nh)
        out.append(p)
    return out


@dataclass
class FreshResult:
    """One fresh problem: predicted and measured seconds per method, the advisor's first trusted choice
    (None: it advised nothing), the measured fastest, and the noise of the run."""

    problem: Problem
    predicted: dict
    measured: dict
    advised: str | None
    fastest: str
    noise: timing.Noise
    clock: str = "wall"   # "cpu": every method on one thread, by CPU clock; "cpu+wall": split so

    def __post_init__(self):
        if not isinstance(self.problem, Problem):
            raise TypeError(f"problem: expected a Problem, got {type(self.problem).__name__}")
        for name in ("predicted", "measured"):
            d = getattr(self, name)
            if not isinstance(d, dict) or not d:
                raise TypeError(f"{name}: expected a non-empty dict method -> seconds, got {d!r:.60}")
            for m, v in d.items():
                check_float(v, f"{name}[{m!r}]", low=0.0, low_inclusive=False)
        check_choice(self.fastest, "fastest", tuple(self.measured))
        if self.advised is not None:
            check_choice(self.advised, "advised", tuple(self.measured))
        if not isinstance(self.noise, timing.Noise):
            raise TypeError(f"noise: expected a Noise, got {type(self.noise).__name__}")

    @property
    def hit(self) -> bool | None:
        """First choice measured fastest or within :data:`WITHIN` of it; None when nothing was advised."""
        if self.advised is None:
            return None
        return self.measured[self.advised] <= WITHIN * self.measured[self.fastest]

    @property
    def model_hit(self) -> bool:
        """The model's own pick (least predicted time, no trust guards) measured fastest or within WITHIN."""
        pick = min(self.predicted, key=self.predicted.get)
        return self.measured[pick] <= WITHIN * self.measured[self.fastest]

    def errors(self) -> dict:
        return {m: max(self.predicted[m] / self.measured[m], self.measured[m] / self.predicted[m])
                for m in self.measured}


@dataclass
class AdvisorCheck:
    results: list

    def __post_init__(self):
        if not isinstance(self.results, list) or not all(isinstance(r, FreshResult) for r in self.results):
            raise TypeError(f"results: expected a list of FreshResult, got {self.results!r:.60}")

    @property
    def hits(self) -> int:
        return sum(1 for r in self.results if r.hit)

    @property
    def advised(self) -> int:
        return sum(1 for r in self.results if r.advised is not None)

    def table(self) -> str:
        lines = [f"{'problem':<58} {'method':<10} {'predicted':>10} {'measured':>10} {'error':>7}"]
        for r in self.results:
            err = r.errors()
            for k, m in enumerate(sorted(r.measured, key=r.measured.get)):
                tag = (" <- advised" if m == r.advised else "") + (" (fastest)" if m == r.fastest else "")
                lines.append(f"{(r.problem.describe() if k == 0 else ''):<58} {m:<10} "
                             f"{timing.fmt_seconds(r.predicted[m]):>10} {timing.fmt_seconds(r.measured[m]):>10} "
                             f"{err[m]:>6.2f}x{tag}")
            verdict = ("advised nothing" if r.hit is None else "hit" if r.hit else
                       f"miss: {r.advised} took {r.measured[r.advised] / r.measured[r.fastest]:.2f}x the fastest")
            lines.append(f"{'':<58} -> {verdict}" + {"cpu": " (timed by CPU clock: every method on one thread)",
                                                     "cpu+wall": " (one-thread methods by CPU clock, the others "
                                                                 "by wall clock)"}.get(r.clock, "")
                         + ("" if r.noise.ok else f"  [unreliable run: {'; '.join(r.noise.reasons)}]"))
        return "\n".join(lines)

    def summary(self) -> str:
        """The hit rate and, computed from the table, where the model fails (methods off > 2x, with the
        part of the cost the model thought largest) and how many runs the noise guard rejected."""
        n = len(self.results)
        off: dict = {}
        for r in self.results:
            for m, e in r.errors().items():
                if e > 2.0:
                    off[m] = max(off.get(m, 0.0), e)
        bad = sum(1 for r in self.results if not r.noise.ok)
        raw = sum(1 for r in self.results if r.model_hit)
        s = (f"advisor: first trusted choice the measured fastest or within {WITHIN}x of it on {self.hits} of {n} "
             f"fresh problems; advised something on {self.advised} of {n}; the model's own pick (no trust "
             f"guards) was the fastest or within {WITHIN}x on {raw} of {n}")
        if off:
            s += "; the model is off by more than 2x for " + ", ".join(f"{m} (up to {e:.1f}x)" for m, e in
                                                                       sorted(off.items(), key=lambda x: -x[1]))
        if bad:
            s += f"; {bad} of {n} runs were unreliable (busy machine): their hits and misses say little"
        return s

    def __str__(self) -> str:
        return self.table() + "\n" + self.summary()


def _one_thread(method: str, cost, machine: Machine) -> bool:
    """Whether the course's code for ``method`` runs on one thread here: the one-thread methods, a thread pool
    of one worker (``P == 1``), a compiled scan when numba has one thread."""
    if method in ONE_THREAD:
        return True
    if method in ("threads", "wavefront", "mgrit"):
        return cost.P == 1
    return method in ("chunked", "channels") and machine.compiled_threads == 1


def check_advisor(problems, machine: Machine | None = None, *, calibration: dict | None = None,
                  repeat: int = 3) -> AdvisorCheck:
    """Predict, advise and measure every runnable method on each of ``problems`` (see the module docstring)."""
    if isinstance(problems, (str, bytes)) or not hasattr(problems, "__iter__"):
        raise TypeError(f"problems: expected a non-empty list of Problem, got {type(problems).__name__}")
    problems = list(problems)
    if not problems or not all(isinstance(p, Problem) for p in problems):
        raise TypeError("problems: expected a non-empty list of Problem")
    if machine is not None and not isinstance(machine, Machine):
        raise TypeError(f"machine: expected a Machine, got {type(machine).__name__}")
    if calibration is not None and not isinstance(calibration, dict):
        raise TypeError(f"calibration: expected a dict method -> error factor, got {type(calibration).__name__}")
    repeat = check_repeat(repeat)
    machine = Machine.measure() if machine is None else machine
    out = []
    for p in problems:
        methods = [m for m in runnable(p) if m not in _SKIP]
        preds, costs = {}, {}
        for m in methods:
            try:
                costs[m] = predict(m, p, machine)
            except ValueError:
                continue  # the model says it cannot apply (e.g. threads with batch 1)
            preds[m] = costs[m].seconds
        methods = list(preds)
        ranked = advise(p, machine, methods=methods, calibration=calibration)
        one = [m for m in methods if _one_thread(m, costs[m], machine)]  # by CPU clock; the others by wall clock
        meas, noise = {}, timing.Noise()
        for group, clock in ((one, "cpu"), ([m for m in methods if m not in one], "wall")):
            if group:
                cmp = measure(p, group, repeat=repeat, clock=clock)
                meas.update({m: cmp.timings[m].median for m in group})
                noise = noise | cmp.noise
        clock = "cpu" if len(one) == len(methods) else "wall" if not one else "cpu+wall"
        out.append(FreshResult(p, preds, meas, first_choice(ranked), min(meas, key=meas.get), noise, clock))
    return AdvisorCheck(out)


# =========================================================================== records of a machine's run
def _problem_dict(p: Problem) -> dict:
    return asdict(p)


def save_record(directory, machine: Machine, cal, check: AdvisorCheck, *, notes=(), **meta) -> str:
    """Write ``directory/machine.json`` (``machine``) and ``directory/record.json``: the hold-out table of
    ``cal`` (a :class:`~.configurations.Calibration`: per row the configuration, method, options, problem,
    predicted and measured seconds, clock; per configuration the noise guard's reasons, if any) and the
    fresh-problem table of ``check``, with ``notes`` (sentences) and ``meta`` (JSON-able facts: commit, load ...).
    Returns the record's path."""
    from .configurations import Calibration
    if not isinstance(directory, (str, os.PathLike)) or not str(directory).strip():
        raise TypeError(f"directory: expected a folder name, got {directory!r:.60}")
    if not isinstance(cal, Calibration):
        raise TypeError(f"cal: expected a Calibration, got {type(cal).__name__}")
    if not isinstance(check, AdvisorCheck):
        raise TypeError(f"check: expected an AdvisorCheck, got {type(check).__name__}")
    if isinstance(notes, str) or not all(isinstance(n, str) for n in notes):
        raise TypeError(f"notes: expected a list of sentences, got {notes!r:.60}")
    os.makedirs(directory, exist_ok=True)
    machine.save(os.path.join(directory, "machine.json"))
    opts = cal.info.get("opts", {})
    rows = [{"config": r.config, "label": r.label, "method": r.method, "opts": opts.get(r.config, {}).get(r.label, {}),
             "problem": _problem_dict(r.problem), "predicted": r.predicted, "measured": r.measured, "clock": r.clock}
            for r in cal.rows]
    unreliable = {c: n.reasons for c, n in cal.noise.items() if n is not None and not n.ok}
    fresh = [{"problem": _problem_dict(r.problem), "predicted": r.predicted, "measured": r.measured,
              "clock": r.clock, "advised": r.advised, "fastest": r.fastest, "unreliable": r.noise.reasons}
             for r in check.results]
    path = os.path.join(directory, "record.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"format": RECORD_FORMAT, "notes": list(notes), **meta,
                   "holdout": {"rows": rows, "unreliable": unreliable}, "fresh": fresh}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return path


def load_record(directory) -> tuple[Machine, dict]:
    """The saved machine and record of ``directory`` (see :func:`save_record`); a folder that does not hold
    one raises ValueError (FileNotFoundError) naming ``directory``."""
    if not isinstance(directory, (str, os.PathLike)) or not str(directory).strip():
        raise TypeError(f"directory: expected a folder name, got {directory!r:.60}")
    path = os.path.join(directory, "record.json")
    rec = read_json(path, "directory", "a record")
    if not isinstance(rec, dict) or rec.get("format") != RECORD_FORMAT or \
            not isinstance(rec.get("holdout"), dict) or not isinstance(rec.get("fresh"), list):
        raise ValueError(f"directory: {path!r} is not a record in the format {RECORD_FORMAT!r}")
    return Machine.load(os.path.join(directory, "machine.json")), rec


def _noise(reasons) -> timing.Noise:
    return timing.Noise(notes=[str(r) for r in reasons or ()])


def replay(directory):
    """Today's model and advisor on a recorded machine: every hold-out row and fresh problem of
    ``directory`` predicted again from its saved constants (:func:`load_record`), the calibration's errors
    taken against the times measured there, and the advisor asked again. Returns ``(calibration,
    AdvisorCheck)``: the replayed tables (hits and misses judged by the recorded times)."""
    from .configurations import Calibration, Row
    machine, rec = load_record(directory)
    try:
        rows = []
        for r in rec["holdout"]["rows"]:
            p = Problem(**r["problem"])
            rows.append(Row(r["config"], r["label"], r["method"], predict(r["method"], p, machine, **r["opts"]).seconds,
                            r["measured"], p, r["clock"]))
        noise = {c: _noise(rec["holdout"]["unreliable"].get(c)) for c in dict.fromkeys(r.config for r in rows)}
        opts: dict = {}
        for r in rec["holdout"]["rows"]:
            opts.setdefault(r["config"], {})[r["label"]] = dict(r["opts"])
        cal = Calibration(machine, rows, noise, {"opts": opts, "extra": {}})
        out = []
        for f in rec["fresh"]:
            p, meas = Problem(**f["problem"]), f["measured"]
            preds = {m: predict(m, p, machine).seconds for m in meas}
            ranked = advise(p, machine, methods=list(meas), calibration=cal.errors())
            out.append(FreshResult(p, preds, dict(meas), first_choice(ranked), min(meas, key=meas.get),
                                   _noise(f.get("unreliable")), f.get("clock", "wall")))
    except (KeyError, TypeError) as exc:
        raise ValueError(f"directory: the record in {os.fspath(directory)!r} lacks or garbles {exc}") from None
    return cal, AdvisorCheck(out)
