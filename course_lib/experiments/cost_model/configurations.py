"""The cost model checked against the course (experiments folder, chapter 12): each chapter's benchmark
configuration (:data:`CONFIG_NAMES`), timed and predicted -> :class:`Row` s and a :class:`Calibration`
(:func:`calibrate`); the seeds' headline schedules on their machines (:func:`seed_schedules`); measured
speedups; rankings and winner maps (:func:`ranking_and_maps`).
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, replace

import numpy as np

from ...core import backend, timing
from ...core.validate import check_bool, check_choice, check_int, check_positive_int, check_repeat, check_str
from . import cluster
from .advice import advise
from .machine import GPU, Machine, check_rates
from .model import MGRIT_TOL, predict, step_cost
from .problem import Problem

__all__ = ["CONFIG_NAMES", "Row", "Error", "Calibration", "calibrate", "single_threaded", "ONE_THREAD", "seed_schedules", "measured_speedups",
           "seed_reasons",
           "SEED_SCHEDULES", "SEED_ELSEWHERE", "ranking_and_maps"]


# One function per chapter: it builds that chapter's benchmark configuration at a small size, with the
# course's own code, and returns zero-argument callables to time plus the model's name for each. These
# are the only places this module calls other chapters' code -- fix them here if an API moves.
CONFIG_NAMES = ("03 batching", "05 threads", "07 inference", "08 scan (H=1)", "08 scan (H=128)", "10 MGRIT",
                "11 DEER")


def _config_03(small: bool):
    from .execute import inputs, run

    # the course's rnn inference code one sequence at a time and batched (:func:`.execute.run`: the code whose
    # calls the model counts), at chapter 03's sizes; chapter 03's own one-vector-at-a-time loop
    # (``batching.forward_one_at_a_time``) makes different calls, which the model does not count
    B, T, H = (16, 10, 128) if small else (32, 10, 256)
    prob = Problem("rnn", "inference", batch=B, T=T, nh=H, layers=1, ny=H)
    data = inputs(prob, seed=0)
    return prob, {"sequential": ("sequential", {}, lambda: run(prob, "sequential", data=data)),
                  "batched": ("batched", {}, lambda: run(prob, "batched", data=data))}, 1, {}


def _config_05(small: bool):
    from ...models import rnn

    B, T, H = (128, 4, 512) if small else (256, 10, 1000)
    p = rnn.init_params(H, H, H, seed=0)
    X = np.random.default_rng(0).standard_normal((T, B, H)).astype(np.float32)
    P = backend.cpu_count()

    def on(n):
        def run():
            with backend.blas_threads(n):
                rnn.forward(p, X)
        return run
    prob = Problem("rnn", "inference", batch=B, T=T, nh=H, layers=1, ny=H)
    return prob, {"batched": ("batched", {}, on(1)),   # BLAS's own threads: one Python thread, no GIL to share
                  f"threads ({P})": ("threads", {"P": P, "python": False}, on(P))}, None, {}


def _config_07(small: bool):
    from ...parallel import inference
    from ...models.softmax_rnn import init_params

    B, T, H, L = (32, 16, 64, 4) if small else (64, 32, 64, 4)
    P = backend.cpu_count()
    params = init_params(32, H, 32, layers=L, seed=0)
    X = np.random.default_rng(1).standard_normal((T, B, 32)).astype(np.float32)
    prob = Problem("rnn", "inference", batch=B, T=T, nh=H, layers=L, nx=32, ny=32)
    run = {m: (lambda m=m: inference.predict(params, X, method=m, **({"threads": P} if m in ("threads", "wavefront")
                                                                        else {})))
           for m in ("sequential", "batched", "threads", "wavefront")}
    return prob, {m: (m, {"P": P} if m in ("threads", "wavefront") else {}, f) for m, f in run.items()}, 1, {}


def _config_08(small: bool, nh: int):
    from ...algorithms import scan

    T = (1 << 18 if small else 1 << 20) // max(1, nh // 8)
    a, x, h0 = scan.random_problem(T, nh, seed=0)
    out = np.empty_like(a)
    P = backend.max_threads()  # numba threads the chunked and channels scans can use here
    prob = Problem("linear", "inference", batch=1, T=T, nh=nh)
    return prob, {"sequential": ("sequential", {}, lambda: scan.linear_recurrence(a, x, h0, out=out)),
                  "chunked": ("chunked", {"P": P}, lambda: scan.linear_recurrence(a, x, h0, method="chunked", out=out)),
                  "channels": ("channels", {"P": P},
                               lambda: scan.linear_recurrence(a, x, h0, method="channels", out=out))}, None, {}


def _config_10(small: bool):
    from ...models import gru

    B, T, H = (16, 256, 32) if small else (16, 1024, 32)
    P = backend.cpu_count()
    p = gru.init_params(8, H, seed=0)
    X = np.random.default_rng(0).standard_normal((T, B, 8)).astype(np.float32)
    opts = dict(m=4, levels=2, relax="FCF", max_iter=30, tol=MGRIT_TOL)
    _, hist = gru.gru_forward(p, X, implicit=True, method="mgrit", return_history=True, **opts)
    iters = max(1, len(hist))
    prob = Problem("gru", "inference", batch=B, T=T, nh=H, nx=8)
    return prob, {"batched GRU": ("batched", {}, lambda: gru.gru_forward(p, X, implicit=True)),
                  "mgrit (1 thread)": ("mgrit", {"P": 1, "iters": iters},
                                       lambda: gru.gru_forward(p, X, implicit=True, method="mgrit", **opts)),
                  f"mgrit ({P} threads)": ("mgrit", {"P": P, "iters": iters},
                                           lambda: gru.gru_forward(p, X, implicit=True, method="mgrit", threads=P,
                                                                   **opts))}, 1, {"iterations": iters}


def _config_11(small: bool):
    from ...models import gru
    from ...parallel import deer

    B, T, H = (4, 512, 8) if small else (4, 1024, 8)
    p = gru.init_params(3, H, seed=0, dtype=np.float64)
    X = np.random.default_rng(1).standard_normal((T, B, 3))
    its = {}
    for m in ("newton", "quasi"):
        _, hist = deer.gru_forward(p, X, method=m, tol=1e-8, return_history=True)
        its[m] = max(1, len(hist) - 1)
    prob = Problem("gru", "inference", batch=B, T=T, nh=H, nx=3)
    return prob, {"batched GRU": ("batched", {}, lambda: gru.gru_forward(p, X)),
                  "newton": ("newton", {"iters": its["newton"], "P": 1},
                           lambda: deer.gru_forward(p, X, method="newton", tol=1e-8)),
                  "quasi": ("quasi", {"iters": its["quasi"], "P": 1},
                                 lambda: deer.gru_forward(p, X, method="quasi", tol=1e-8))}, 1, \
        {"iterations": its}


CONFIGS = {"03 batching": _config_03, "05 threads": _config_05, "07 inference": _config_07,
            "08 scan (H=1)": lambda s: _config_08(s, 1), "08 scan (H=128)": lambda s: _config_08(s, 128),
            "10 MGRIT": _config_10, "11 DEER": _config_11}


@dataclass
class Row:
    """One line of the predicted-vs-measured table."""

    config: str
    label: str
    method: str
    predicted: float
    measured: float
    problem: Problem
    clock: str = "wall"   # "cpu": a single-threaded configuration timed by its thread's CPU clock

    def __post_init__(self):
        for k in ("config", "label", "method"):
            check_str(getattr(self, k), k)
        check_choice(self.clock, "clock", ("wall", "cpu"))
        check_rates(self, ("predicted", "measured"))  # their ratio is the error
        if not isinstance(self.problem, Problem):
            raise TypeError(f"problem: expected a Problem, got {type(self.problem).__name__}")

    @property
    def error(self) -> float:
        """max(pred/meas, meas/pred): 1 is perfect; > 2 means the model is off by more than 2x."""
        return max(self.predicted / self.measured, self.measured / self.predicted)

    @property
    def off(self) -> bool:
        return self.error > 2.0


class Error(float):
    """An error factor ``max(pred/meas, meas/pred)`` (>= 1) that also carries its directions: ``slower``, the
    factor by which the method was measured slower than predicted, and ``faster``, faster than predicted (each 1
    when it never was). Without ``slower``: the factor itself when ``faster`` is less, else 1."""

    def __new__(cls, value: float, faster: float = 1.0, slower: float | None = None):
        obj = super().__new__(cls, value)
        obj.faster = max(1.0, float(faster))
        obj.slower = max(1.0, float(slower if slower is not None else (value if obj.faster < value else 1.0)))
        return obj


@dataclass
class Calibration:
    """The predicted-vs-measured table on this machine, per configuration, with the noise of each run."""

    machine: Machine
    rows: list
    noise: dict
    info: dict

    def __post_init__(self):
        if not isinstance(self.machine, Machine):
            raise TypeError(f"machine: expected a Machine, got {type(self.machine).__name__}")
        if not isinstance(self.rows, list) or not all(isinstance(r, Row) for r in self.rows):
            raise TypeError("rows: expected a list of Row")
        for k in ("noise", "info"):
            if not isinstance(getattr(self, k), dict):
                raise TypeError(f"{k}: expected a dict, got {type(getattr(self, k)).__name__}")

    def _rows(self, config) -> list:
        check_choice(config, "config", self.configs())
        return [r for r in self.rows if r.config == config]

    def configs(self) -> list[str]:
        return list(dict.fromkeys(r.config for r in self.rows))

    def reliable(self, config: str) -> bool:
        """Whether the noise guard accepted ``config``'s run (a Noise of None counts as accepted)."""
        n = self.noise.get(config)
        return n is None or n.ok

    def errors(self) -> dict:
        """``{model method: worst error factor}`` over the runs the noise guard accepted -- what
        :func:`advise` takes as ``calibration``; a method measured only in unreliable runs maps to None
        (the advisor does not advise it: nothing reliable was measured). Each factor is an :class:`Error`
        that also says how much *slower* and how much *faster* than predicted the method was measured
        (``.slower``, ``.faster``, each >= 1): the advisor's error bars, one per direction."""
        out: dict = {}
        for r in self.rows:
            if self.reliable(r.config):
                old = out.get(r.method)
                out[r.method] = Error(max(old or 0.0, r.error),
                                      max(getattr(old, "faster", 1.0), r.predicted / r.measured),
                                      max(getattr(old, "slower", 1.0), r.measured / r.predicted))
            else:
                out.setdefault(r.method, None)
        return out

    def measured_fastest(self, config: str) -> str:
        rows = self._rows(config)
        return min(rows, key=lambda r: r.measured).label

    def predicted_fastest(self, config: str) -> str:
        rows = self._rows(config)
        return min(rows, key=lambda r: r.predicted).label

    def advised(self, config: str) -> str | None:
        """The advisor's first choice among this configuration's methods (the rule of :func:`advise`): the
        least predicted of those measured in a run the noise guard accepted, a miss or not -- the miss is
        said, not a reason for silence; None when none was."""
        errs = self.errors()
        rows = [r for r in self._rows(config) if errs.get(r.method) is not None]
        return min(rows, key=lambda r: r.predicted).label if rows else None

    def explain(self, config: str) -> str:
        """Whether the advisor's first choice is the measured fastest here, and if not why (computed); the
        rows the model missed by more than 2x, with the direction of the miss."""
        rows = {r.label: r for r in self.rows if r.config == config}
        adv, fast = self.advised(config), self.measured_fastest(config)
        if not self.reliable(config):
            return f"{config}: no conclusion -- {'; '.join(self.noise[config].reasons)}"
        if adv is None:
            return f"{config}: the advisor advises nothing here -- no method here was measured in a reliable run"
        off = [r for r in rows.values() if r.off]
        said = "" if not off else " (advised with the model off by more than 2x here for " + ", ".join(
            f"{r.label}: measured {r.error:.1f}x {'slower' if r.measured > r.predicted else 'faster'} than predicted"
            for r in off) + ")"
        if adv == fast:
            return f"{config}: the advisor's first choice, {adv}, is the measured fastest{said}."
        a, f = rows[adv], rows[fast]
        close = a.measured / f.measured
        if close < 1.1:
            why = f"they were within {close:.2f}x of each other, closer than the model can tell apart"
        else:
            why = (f"the predicted ratio {a.predicted / f.predicted:.2f} and the measured "
                   f"{close:.2f} fall on opposite sides of 1")
        return f"{config}: the advisor picks {adv}, the measured fastest is {fast} -- {why}{said}."

    def table(self) -> str:
        w = max(len(r.config) for r in self.rows)
        lw = max(len(r.label) for r in self.rows)
        lines = [f"{'configuration':<{w}}  {'method':<{lw}}  {'predicted':>10}  {'measured':>10}  {'clock':>5}  "
                 f"{'error':>6}"]
        for r in self.rows:
            mark = f"  OFF >2x: {'slower' if r.measured > r.predicted else 'faster'} than predicted" if r.off else ""
            lines.append(f"{r.config:<{w}}  {r.label:<{lw}}  {timing.fmt_seconds(r.predicted):>10}  "
                         f"{timing.fmt_seconds(r.measured):>10}  {r.clock:>5}  {r.error:>5.2f}x{mark}")
        bad = [c for c, n in self.noise.items() if not n.ok]
        if bad:
            lines.append("unreliable runs (busy machine or wide spread): " + ", ".join(bad))
        if any(r.clock == "cpu" for r in self.rows):
            lines.append("clock cpu: the method runs on one thread, so it is timed by its thread's CPU clock "
                         "(waits for a core that other processes cause are not counted); wall: on several threads")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


ONE_THREAD = ("sequential", "batched", "newton", "quasi")  # the course's code for these runs on one thread


def single_threaded(entries: dict, blas, problem: Problem | None = None) -> bool:
    """Whether every method of ``entries`` runs on one thread (BLAS on one thread -- a linear recurrence
    uses none --, no worker threads): then its timing by CPU clock is what a quiet core would give,
    whatever the load."""
    no_blas = blas == 1 or (problem is not None and problem.kind == "linear")
    return no_blas and all((meth in ONE_THREAD and o.get("P", 1) == 1) or o.get("P") == 1
                           for meth, o, _ in entries.values())


def _timed(entries: dict, clocks: dict, blas, repeat: int) -> tuple[dict, timing.Noise, dict]:
    """Medians per label: the one-thread entries interleaved by CPU clock, the others by wall clock; the noise
    of both runs together, and of each (``{"cpu": Noise, "wall": Noise}``, the clocks that ran)."""
    med, noise, by_clock = {}, timing.Noise(), {}
    for clock in ("cpu", "wall"):
        fns = {label: f for label, (_, _, f) in entries.items() if clocks[label] == clock}
        if not fns:
            continue
        with backend.blas_threads(blas) if blas is not None else nullcontext():
            cmp = timing.compare(repeat=repeat, clock=clock, **fns)
        med.update({k: t.median for k, t in cmp.timings.items()})
        noise, by_clock[clock] = noise | cmp.noise, cmp.noise
    return med, noise, by_clock


def calibrate(configs=None, *, machine: Machine | None = None, small: bool = True, repeat: int = 3) -> Calibration:
    """Run each chapter's benchmark configuration (``configs``: names from :data:`CONFIG_NAMES`) with
    :func:`core.timing.compare` (by CPU clock where every method runs on one thread: :func:`single_threaded`)
    and predict it with the model on ``machine`` (default: measured now).
    Returns a :class:`Calibration` (the predicted-vs-measured table)."""
    if configs is not None and (isinstance(configs, str) or not hasattr(configs, "__iter__")):
        raise TypeError(f"configs: expected a list of names from CONFIG_NAMES, got {configs!r}")
    configs = CONFIG_NAMES if configs is None else tuple(check_choice(c, "configs", CONFIG_NAMES) for c in configs)
    if not configs:
        raise ValueError("configs: expected at least one configuration name, got none")
    small = check_bool(small, "small")
    repeat = check_repeat(repeat)
    if machine is not None and not isinstance(machine, Machine):
        raise TypeError(f"machine: expected a Machine, got {type(machine).__name__}")
    machine = Machine.measure() if machine is None else machine
    rows, noise, info = [], {}, {"opts": {}, "extra": {}, "noise_by_clock": {}}
    for name in configs:
        prob, entries, blas, extra = CONFIGS[name](small)
        clocks = {label: ("cpu" if single_threaded({label: e}, blas, prob) else "wall") for label, e in entries.items()}
        med, noise[name], info["noise_by_clock"][name] = _timed(entries, clocks, blas, repeat)
        info["opts"][name] = {label: o for label, (_, o, _) in entries.items()}
        info["extra"][name] = extra
        for label, (meth, o, _) in entries.items():
            pred = predict(meth, prob, machine, **o).seconds
            rows.append(Row(name, label, meth, pred, med[label], prob, clocks[label]))
    return Calibration(machine, rows, noise, info)


# =========================================================================== the seeds' machines, simulated
# claim id -> (configuration, baseline label, parallel label prefix, what the seed's quantity is), or None
# where no chapter-12 configuration measures the seed's own quantity (like with like: the quantity the
# chapter that reproduces the seed measures).
SEED_SCHEDULES = {
    "000.halide.summary.speedup": None,  # best Halide schedule vs sequential Halide, training: chapter 06
    "001.summary.kernel_speedup": ("08 scan (H=128)", "channels", "chunked",
                                   "chunked scan over time vs the loop serial over time and parallel over "
                                   "channels (the seed's 'serial' kernel; chapter 08's ratio)"),
    "002.speedup.max": ("10 MGRIT", "batched GRU", "mgrit",
                        "MGRIT vs the GRU marched over time (the seed's: training; here an inference pass)"),
}
SEED_ELSEWHERE = {"000.halide.summary.speedup": "best Halide schedule vs sequential Halide in training -- "
                                                "measured in chapter 06 (needs Halide), not by a chapter-12 run"}

def seed_schedules() -> dict:
    """Each seed's headline schedule on its own machine (:meth:`Machine.preset`, assumptions labelled),
    as a task graph on the virtual clock: ``{claim id: {"graph", "P", "serial_s", "simulated", "setting"}}``.
    ``simulated`` = one-processor time / the simulated makespan."""
    out = {}
    phi = Machine.preset("xeon_phi")
    prob = Problem("rnn", "training", batch=1000, T=10, nh=1000, ny=1000)
    f, b, _ = step_cost(prob, phi, prob.batch)
    par = f / (1e9 * phi.gemm_gflops_core)             # the GEMMs of one step on one core
    elem = b / phi.bandwidth(phi.cores)               # element-wise passes: the memory bus, shared by all cores
    g = cluster.threads_step_graph(prob.T, phi.cores, parallel_part=par, serial_part=elem, barrier=phi.region_s)
    serial = prob.T * (par + b / phi.bandwidth(1))
    out["000.halide.summary.speedup"] = dict(graph=g, P=phi.cores, serial_s=serial,
                                             simulated=serial / g.simulate(phi.cores).makespan,
                                             setting=f"{phi.name}; seed 000's step B=1000, n=1000, T=10")
    host = Machine.preset("k80_host")
    gpu = host.gpu
    T, H, sms = 1 << 20, 128, 13
    bw = 1e9 * gpu.bandwidth_gbs / sms
    g = cluster.chunked_scan_graph(T, sms, reduce=8 * H / bw, carry=gpu.step_latency_s, expand=12 * H / bw,
                                   launch=gpu.launch_s)
    serial = T * gpu.step_latency_s + gpu.launch_s
    out["001.summary.kernel_speedup"] = dict(graph=g, P=sms, serial_s=serial,
                                             simulated=serial / g.simulate(sms).makespan,
                                             setting=f"{gpu.name}, 13 SMs; T=2^20, H=128 (assumed: "
                                                     f"{gpu.step_latency_s * 1e6:g} µs per dependent step)")
    nt, P = 128, 32
    g = cluster.mgrit_graph(nt, m=4, levels=3, iters=2, P=P, latency=0.5)
    out["002.speedup.max"] = dict(graph=g, P=P, serial_s=float(nt), simulated=nt / g.simulate(P).makespan,
                                  setting="Attaway: 128 frames, P = 128/4 = 32 processors, m=4, 3 levels, "
                                          "2 iterations (assumed), exchange = half a step (assumed); GRU only, "
                                          "no ResNet preprocessing")
    return out


def _seed_rows(cal: Calibration):
    """``(claim id, spec, baseline row, parallel rows)`` for each seed schedule whose configuration ``cal`` ran
    (the parallel method's variants: rows whose label starts with the spec's parallel label)."""
    if not isinstance(cal, Calibration):
        raise TypeError(f"cal: expected a Calibration (see calibrate), got {type(cal).__name__}")
    for cid, spec in SEED_SCHEDULES.items():
        if spec is None:
            continue
        config, base, par, _ = spec
        rows = [r for r in cal.rows if r.config == config]
        b = [r for r in rows if r.label == base]
        p = [r for r in rows if r.label.startswith(par) and r.label != base]
        if b and p:
            yield cid, spec, b[0], p


def measured_speedups(cal: Calibration) -> dict:
    """``{claim id: (speed-up measured here, what, noise)}`` for the seeds' schedules whose configuration
    ``cal`` ran (baseline time / the parallel method's time, medians of one interleaved run; of several variants
    of the parallel method -- MGRIT on one thread and on every core -- the one measured fastest here). The noise
    is that of the run both sides of the ratio were timed in (both one thread's work: the CPU-clocked run, not
    the threaded variant's beside it), else the whole configuration's."""
    out = {}
    for cid, (config, base, _, what), b, p in _seed_rows(cal):
        q = min(p, key=lambda r: r.measured)
        which = f" (the fastest of {', '.join(r.label for r in p)} here)" if len(p) > 1 else ""
        noise = cal.info.get("noise_by_clock", {}).get(config, {}).get(b.clock) if b.clock == q.clock else None
        out[cid] = (b.measured / q.measured, f"{config}: {base} / {q.label}{which} -- {what}",
                    noise if noise is not None else cal.noise[config])
    return out


def measured_threads(cal: Calibration) -> dict:
    """``{claim id: threads}``: the threads (workers) each :func:`measured_speedups` ratio ran on, what a verdict
    on it states as ``cores_used`` -- the more of its two sides' (the baseline row and the fastest parallel row):
    a row's options' P (1 without one), and at least 2 (where the machine has 2 cores) for a row timed by the
    wall clock, whose BLAS or workers may run threads."""
    def threads(r):
        return max(_threads(cal, r), 1 if r.clock == "cpu" else min(2, cal.machine.cores))
    return {cid: max(threads(b), threads(min(p, key=lambda r: r.measured))) for cid, _, b, p in _seed_rows(cal)}


def seed_reasons(cid: str, cal: Calibration, seed_P: int) -> list[tuple[bool, str]]:
    """Why the speed-up :func:`measured_speedups` gives for ``cid`` may differ from the seed's (measured on
    ``seed_P`` processors): ``(condition, sentence)`` pairs, most specific first, every condition a measured
    fact of ``cal`` that bears on that very ratio. A core count is a reason only where the ratio's method ran on
    several cores here and they helped; where a second thread slowed it, that is the reason."""
    check_choice(cid, "cid", tuple(k for k, v in SEED_SCHEDULES.items() if v))
    check_positive_int(seed_P, "seed_P")
    config, base, par, _ = SEED_SCHEDULES[cid]
    rows = {r.label: r for r in cal.rows if r.config == config}
    if base not in rows:
        return []
    b = rows[base].measured
    one = next((r for r in rows.values() if r.label.startswith(par) and r.method != rows[base].method
                and _threads(cal, r) == 1), None)
    many = max((r for r in rows.values() if r.label.startswith(par) and _threads(cal, r) > 1),
               key=lambda r: _threads(cal, r), default=None)
    out = []
    if one is not None and many is not None:
        n, gain = _threads(cal, many), one.measured / many.measured
        work = f"on one thread {one.label.split(' (')[0]} took {one.measured / b:.3g}x the time of {base}"
        out += [(one.measured > b and gain < 1,
                 f"{work}, and on {n} threads {1 / gain:.2g}x longer still ({_fmt(many.measured)} against "
                 f"{_fmt(one.measured)} on one): its Python threads take turns holding the GIL (chapter 10)"),
                (gain < 1, f"on {n} threads it took {1 / gain:.2g}x its one-thread time here: its Python threads take "
                           "turns holding the GIL (chapter 10)"),
                (one.measured > b and gain > 1 and n < seed_P,
                 f"{work}; {n} cores here made it {gain:.2g}x faster, {seed_P} processors in the seed's run"),
                (one.measured > b, work)]
    elif many is not None and "sequential" in {r.method for r in rows.values()}:
        seq = next(r for r in rows.values() if r.method == "sequential").measured
        n, gain = _threads(cal, many), seq / many.measured
        out += [(gain > 1 and n < seed_P, f"{n} cores here (on them {many.label} ran {gain:.2g}x the one-thread "
                                          f"loop), {seed_P} processors in the seed's run"),
                (gain <= 1, f"on {n} threads {many.label} was no faster than the one-thread loop here "
                            f"({gain:.2g}x)")]
    return out


def _threads(cal: Calibration, row: Row) -> int:
    """The threads (workers) a calibration row's method ran on: its options' P, else 1."""
    return int(cal.info.get("opts", {}).get(row.config, {}).get(row.label, {}).get("P", 1))


def _fmt(s: float) -> str:
    return timing.fmt_seconds(s)


# =========================================================================== the widget's data
def ranking_and_maps(batch: int = 32, T: int = 256, nh: int = 128, layers: int = 2, cores: int = 2, gpu: bool = False,
                     kind: str = "rnn", mode: str = "inference", *, machine: Machine | None = None,
                     calibration: dict | None = None, n: int = 6) -> dict:
    """The slider panel's data: the advisor's ranking for one problem on ``machine`` with ``cores``
    (virtual) cores and an assumed GPU or none, and the winning (trusted) method over a (T, H) grid and
    a (B, P) grid around it (``n`` x ``n`` points)."""
    n = check_int(n, "n", low=1, high=64)
    cores = check_positive_int(cores, "cores", high=4096)
    gpu = check_bool(gpu, "gpu")
    prob = Problem(kind, mode, batch=batch, T=T, nh=nh, layers=1 if kind == "linear" else layers)
    if machine is not None and not isinstance(machine, Machine):
        raise TypeError(f"machine: expected a Machine, got {type(machine).__name__}")
    if calibration is not None and not isinstance(calibration, dict):
        raise TypeError(f"calibration: expected a dict method -> error factor, got {type(calibration).__name__}")
    base = Machine.measure() if machine is None else machine
    mach = base.with_cores(cores)
    mach = mach.with_gpu(GPU.assumed() if gpu else None)
    adv = advise(prob, mach, calibration=calibration)

    def win(p, m):
        return advise(p, m, calibration=calibration)[0].method

    Ts = sorted({max(8, int(T * 4.0 ** k)) for k in np.linspace(-2, 2, n)})
    Hs = sorted({max(4, int(nh * 4.0 ** k)) for k in np.linspace(-1.5, 1.5, n)})
    Bs = sorted({max(1, int(batch * 4.0 ** k)) for k in np.linspace(-2, 2, n)})
    Ps = sorted({max(1, int(cores * 4.0 ** k)) for k in np.linspace(-1, 2, n)})
    th = [[win(replace(prob, T=t, nh=h), mach) for t in Ts] for h in Hs]
    bp = [[win(replace(prob, batch=b), base.with_cores(P).with_gpu(mach.gpu)) for b in Bs] for P in Ps]
    return {"problem": prob, "machine": mach, "advice": adv,
            "TH": {"x": Ts, "y": Hs, "winner": th, "xlabel": "T", "ylabel": "H"},
            "BP": {"x": Bs, "y": Ps, "winner": bp, "xlabel": "B", "ylabel": "cores P"}}
