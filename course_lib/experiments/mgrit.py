"""Measuring and sweeping MGRIT (experiments layer; chapter 10).

Everything here either sweeps the solver (plain data for tables, plots and widgets) or times it
with :func:`course_lib.core.timing.compare` / :func:`~course_lib.core.timing.measure`; the solver
itself (:mod:`course_lib.algorithms.mgrit`), the GRU (:mod:`course_lib.models.gru`) and the MPI
version (:mod:`course_lib.parallel.mgrit_mpi`) never time anything.

``convergence_histories(...)`` / ``convergence_table(...)``  -- MGRIT on Dahlquist's problem, for tables/widgets
``speedup_model(nt, Ps, ...)``        -- the work/span model's speedup for each processor count
``counted_work(nt, ...)``             -- time steps MGRIT really takes (counted), per serial step
``preprocessing_model(nt, P, c, ...)`` -- the span model with a per-frame cost ``c`` that is parallel over time
``time_axis(Ts, batch, P, ...)``          -- data parallelism vs the time axis: serial GRU time vs T, whole batch vs B/P
``forward_speed(params, X, ...)``     -- serial vs MGRIT (1 thread, threads) in one process, interleaved
``speedup_vs_length(Ts, ...)``        -- serial vs MGRIT over MPI ranks for each sequence length, with the model
``layouts(T, cores)`` / ``fastest_layout`` -- the hybrid layout: MGRIT over ranks x threads per rank, every fit
``train_compare(runs, data, seeds)``  -- train classic / implicit / MGRIT-implicit GRUs, test accuracy per seed
``batch_accuracy(data, batches)``     -- seed 002's caveat: test accuracy vs mini-batch size at a fixed epoch budget
"""
from __future__ import annotations

import math

import numpy as np

from ..algorithms import mgrit
from ..core import backend, timing
from ..core.backend import mpi_available
from ..core.validate import (check_alloc, check_alloc_of, check_array, check_callable, check_choice, check_float, check_int,
                             check_positive_int, check_repeat)
from ..models import gru

__all__ = [
    "convergence_histories",
    "convergence_table",
    "speedup_model",
    "counted_work",
    "preprocessing_model",
    "preprocessing_needed",
    "time_axis",
    "forward_speed",
    "speedup_vs_length",
    "train_compare",
    "layouts",
    "fastest_layout",
    "batch_accuracy",
]


# --------------------------------------------------------------------------- validation helpers
def _check_seq(values, name: str, item=None, item_name: str | None = None) -> list:
    """A non-empty list/tuple/array of items, each checked by ``item(value, "name[i]")`` (so a bad one is named
    by its index; ``item_name`` is kept for the callers' readability: what one item is)."""
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name}: expected a non-empty sequence, got {type(values).__name__} {values!r}")
    values = list(values)
    if not values:
        raise ValueError(f"{name}: expected a non-empty sequence, got an empty one")
    return [item(v, f"{name}[{i}]") if item is not None else v for i, v in enumerate(values)]


def _check_levels(levels, nt: int) -> int:
    """Up front: a coarsest level of >= 2 steps needs m**(levels-1) <= nt / 2 with m >= 2, so levels <= log2(nt)
    (a larger one would first make MGRIT compute m**(levels-1), a huge number, for nothing)."""
    return check_int(levels, "levels", low=1, high=max(1, int(nt).bit_length()))


def _check_nt(nt, name: str = "nt") -> int:
    """A number of time steps; refused before MGRIT allocates its (nt + 1)-row solution."""
    nt = check_positive_int(nt, name)
    check_alloc((nt + 1, 1), np.float64, name, what="MGRIT's solution")
    return nt


# --------------------------------------------------------------------------- convergence sweeps
def convergence_histories(*, problem: str = "dahlquist", ms=(2, 4, 8), levels: int = 2, relax: str = "FCF",
                          nt: int = 256, lam_dt: float = -1.0, max_iter: int = 10, cycle: str = "V",
                          tol: float = 1e-12) -> dict:
    """Residual histories of MGRIT on Dahlquist (``lam * dt = lam_dt``, backward Euler) for each m:
    ``{"ms": [...], "histories": {m: [...]}, "factors": {m: rho}}`` (plain data for plots/widgets)."""
    check_choice(problem, "problem", ("dahlquist",))
    lam_dt = check_float(lam_dt, "lam_dt", high=0.0)
    nt = _check_nt(nt)
    ms = _check_seq(ms, "ms", lambda v, n: check_int(v, n, low=2, high=max(2, nt // 2)), "m")  # coarse level: >= 2 steps
    levels = _check_levels(levels, nt)
    max_iter = check_positive_int(max_iter, "max_iter", high=10_000)
    out = {"ms": list(ms), "histories": {}, "factors": {}, "levels": levels, "relax": relax, "nt": nt,
           "lam_dt": lam_dt}
    for m in ms:
        solver = mgrit.MGRIT(mgrit.dahlquist_step(lam_dt, 1.0, m), m=m, levels=levels, relax=relax,
                             max_iter=max_iter, tol=tol, cycle=cycle)
        _, hist = solver.solve(np.ones(1), nt)
        out["histories"][m] = hist
        out["factors"][m] = mgrit.convergence_factor(hist)
    return out


def convergence_table(ms=(2, 4, 8, 16), lam_dts=(-0.01, -0.1, -1.0, -10.0), *, nt: int = 256, levels: int = 2,
                      relax: str = "F", max_iter: int = 6) -> dict:
    """Convergence factors on Dahlquist for each (m, lam*dt): ``{"ms", "lam_dts", "rho": (len(ms), len(lam_dts))}``."""
    nt = _check_nt(nt)
    ms = _check_seq(ms, "ms", lambda v, n: check_int(v, n, low=2, high=max(2, nt // 2)), "m")
    lam_dts = _check_seq(lam_dts, "lam_dts", lambda v, n: check_float(v, n, high=0.0))
    check_choice(relax, "relax", ("F", "FCF", "FCFCF"))
    levels = _check_levels(levels, nt)
    max_iter = check_positive_int(max_iter, "max_iter", high=10_000)
    rho = np.zeros((len(ms), len(lam_dts)))
    for a, m in enumerate(ms):
        for b, ld in enumerate(lam_dts):
            solver = mgrit.MGRIT(mgrit.dahlquist_step(ld, 1.0, m), m=m, levels=levels, relax=relax,
                                 max_iter=max_iter, tol=0.0)
            _, hist = solver.solve(np.ones(1), nt)
            rho[a, b] = mgrit.convergence_factor(hist)
    return {"ms": list(ms), "lam_dts": list(lam_dts), "rho": rho}


# --------------------------------------------------------------------------- models and counts
def speedup_model(nt: int, Ps, *, m: int = 4, levels: int = 2, iters: int = 2, relax: str = "FCF",
                  latency: float = 1.0) -> np.ndarray:
    """``span_model(...)["speedup"]`` for each P in ``Ps`` (array)."""
    Ps = _check_seq(Ps, "Ps", check_positive_int, "P")
    nt = check_positive_int(nt, "nt")
    levels = _check_levels(levels, nt)
    return np.array([mgrit.span_model(nt, m=m, levels=levels, iters=iters, P=int(P), relax=relax,
                                      latency=latency)["speedup"] for P in Ps])


def counted_work(nt: int, *, m: int = 4, levels: int = 2, relax: str = "FCF", iters: int = 2) -> float:
    """Time steps MGRIT takes for ``iters`` iterations, per serial step (``steps_taken / nt``).
    The count does not depend on the problem, so it is taken on a scalar Dahlquist problem."""
    iters = check_positive_int(iters, "iters", high=10_000)
    nt = _check_nt(nt)
    levels = _check_levels(levels, nt)
    s = mgrit.MGRIT(mgrit.dahlquist_step(-1.0, 1.0, m), m=m, levels=levels, relax=relax, max_iter=iters, tol=0.0)
    s.solve(np.ones(1), nt)
    return s.steps_taken / nt


def preprocessing_model(nt: int, P: int, c: float, *, m: int = 4, levels: int = 3, iters: int = 2,
                        relax: str = "FCF", latency: float = 1.0) -> float:
    """Modelled speedup when every time step also needs a per-frame cost ``c`` (in GRU-step units)
    that is computed once and is parallel over time (the seed's ResNet features): serial
    ``nt * (1 + c)``, parallel ``nt * c / P + span``. A model, not a measurement."""
    c = check_float(c, "c", low=0.0)
    nt = check_positive_int(nt, "nt")
    P = check_positive_int(P, "P")
    levels = _check_levels(levels, nt)
    span = mgrit.span_model(nt, m=m, levels=levels, iters=iters, P=P, relax=relax, latency=latency)["span"]
    return nt * (1.0 + c) / (nt * c / P + span)


def preprocessing_needed(target: float, nt: int, P: int, **model) -> float:
    """The per-frame cost ``c`` (GRU-step units) at which :func:`preprocessing_model` reaches
    ``target``; ``inf`` when even an infinite ``c`` (speedup -> P) does not."""
    target = check_float(target, "target", low=0.0, low_inclusive=False)
    nt = check_positive_int(nt, "nt")
    P = check_positive_int(P, "P")
    if "levels" in model:
        model["levels"] = _check_levels(model["levels"], nt)
    if target >= P:
        return math.inf
    span = mgrit.span_model(nt, P=P, **model)["span"]
    # nt (1 + c) = target (nt c / P + span)  ->  c (nt - target nt / P) = target span - nt
    return max(0.0, (target * span - nt) / (nt * (1.0 - target / P)))


# --------------------------------------------------------------------------- measurements
def time_axis(Ts, *, batch: int = 32, P: int = 4, nh: int = 32, nx: int = 8, repeat: int = 3) -> dict:
    """Data parallelism vs the time axis: the serial GRU forward over the whole batch ``batch`` and over
    ``B // P`` sequences (one of ``P`` data-parallel workers' share), for each length in ``Ts``.

    Returns ``{"Ts", "full": [s], "share": [s], "slope_full", "slope_share", "noise"}`` (median
    seconds, log-log slopes vs T, the merged noise of the runs). One BLAS thread."""
    Ts = _check_seq(Ts, "Ts", check_positive_int)
    P = check_int(P, "P", low=2, high=1 << 16)
    batch = check_int(batch, "batch", low=P)  # each of the P workers gets at least one sequence
    nh, nx = check_positive_int(nh, "nh", high=1 << 16), check_positive_int(nx, "nx", high=1 << 16)
    repeat = check_repeat(repeat)
    for T in Ts:
        check_alloc_of(np.float32, "the inputs", Ts=T, batch=batch, nx=nx)
        check_alloc_of(np.float32, "the gates", factor=3, Ts=T, batch=batch, nh=nh)
    p = gru.init_params(nx, nh, seed=0)
    full, share, noise = [], [], timing.Noise()
    with backend.blas_threads(1):
        for T in Ts:
            X = np.random.default_rng(T).standard_normal((T, batch, nx)).astype(np.float32)
            c = timing.compare(full=lambda: gru.gru_forward(p, X, implicit=True),
                               share=lambda: gru.gru_forward(p, X[:, : batch // P], implicit=True), repeat=repeat)
            full.append(c.timings["full"].median)
            share.append(c.timings["share"].median)
            noise = noise | c.noise
    return {"Ts": Ts, "B": batch, "P": P, "full": full, "share": share,
            "slope_full": timing.loglog_slope(Ts, full), "slope_share": timing.loglog_slope(Ts, share),
            "noise": noise}


def forward_speed(params, X, *, threads: int = 2, repeat: int = 3, **mgrit_opts):
    """Serial vs MGRIT forward (1 thread and ``threads`` threads) in this process, interleaved, one
    BLAS thread. Returns the :class:`~course_lib.core.timing.Comparison` (baseline ``sequential``)."""
    threads = check_positive_int(threads, "threads", high=1024)
    repeat = check_repeat(repeat)
    check_array(X, "X", shape=("T", "B", None), min_size={"T": 1, "B": 1})  # no batch of 0 sequences
    opts = dict(mgrit_opts, method="mgrit")
    implicit = opts.pop("implicit", True)
    with backend.blas_threads(1):
        return timing.compare(sequential=lambda: gru.gru_forward(params, X, implicit=implicit),
                              mgrit_1thread=lambda: gru.gru_forward(params, X, implicit=implicit, **opts),
                              mgrit_threads=lambda: gru.gru_forward(params, X, implicit=implicit, threads=threads,
                                                                    **opts),
                              repeat=repeat)


def speedup_vs_length(Ts, *, ranks: int = 2, batch: int = 16, nh: int = 64, nx: int = 8, m: int = 4, levels: int = 3,
                      relax: str = "FCF", iters: int = 2, repeat: int = 3, timeout: float = 120.0) -> dict:
    """Serial implicit-GRU forward vs MGRIT over ``ranks`` MPI ranks (``iters`` iterations: the
    inexact budget), for each sequence length in ``Ts``.

    The serial march is timed here (one BLAS thread) with :func:`core.timing.measure`; the MPI solve
    inside the job on rank 0's clock (start-up excluded; ``mgrit_mpi.solve(repeat=...)``). Returns
    ``{"Ts", "sequential": [s], "parallel": [s], "speedup": [x], "interval": [(lo, hi)]: the speed-up widened by
    both medians' spreads, "model": [x at P=ranks], "work": steps per serial step, "noise": Noise, "method": "mpi" |
    "threads"}``. Without MPI the
    parallel column is MGRIT with ``ranks`` threads in this process (and ``method`` says so)."""
    Ts = _check_seq(Ts, "Ts", check_positive_int)
    ranks = check_int(ranks, "ranks", low=1, high=256)
    batch, nh, nx = (check_positive_int(v, k, high=1 << 16) for k, v in (("batch", batch), ("nh", nh), ("nx", nx)))
    levels = _check_levels(levels, min(Ts))
    iters = check_positive_int(iters, "iters", high=10_000)
    repeat = check_repeat(repeat)
    timeout = check_float(timeout, "timeout", low=0.0, high=86400.0, low_inclusive=False)
    for T in Ts:
        check_alloc_of(np.float64, "the inputs", Ts=T, batch=batch, nx=nx)
        check_alloc_of(np.float64, "the gates", factor=3, Ts=T, batch=batch, nh=nh)
    ok, _ = mpi_available()
    method = "mpi" if ok else "threads"
    opts = dict(m=m, levels=levels, relax=relax, max_iter=iters, tol=0.0)
    out = {"Ts": Ts, "ranks": ranks, "sequential": [], "parallel": [], "speedup": [], "interval": [], "model": [],
           "method": method,
           "work": counted_work(Ts[0], m=m, levels=levels, relax=relax, iters=iters), "opts": opts}
    noise = timing.Noise()
    p = gru.init_params(nx, nh, seed=0, dtype=np.float64)
    for T in Ts:
        X = np.random.default_rng(T).standard_normal((T, batch, nx))
        h0 = np.zeros((batch, nh))
        with backend.blas_threads(1):
            ts = timing.measure(lambda: gru.gru_forward(p, X, h0, implicit=True), repeat=repeat, number=1)
        noise = noise | ts.noise
        if method == "mpi":
            from ..parallel import mgrit_mpi

            _, _, info = mgrit_mpi.solve({"kind": "gru", "params": p, "X": X, "h0": h0, "implicit": True},
                                         T, ranks=ranks, repeat=repeat, timeout=timeout, **opts)
            times = info["solve_times"]
            # rank 0 sees the other ranks as "other processes": only what is beyond them counts. A spread and a load,
            # not notes: a verdict can still conclude where every value they allow gives one outcome (issue 43)
            excess = None if info["others"] is None else max(0.0, info["others"] - (ranks - 1))
            spread = _spread(times)
            n = timing.Noise(spread=spread, others=excess, wide=len(times) >= 3 and spread > timing.SPREAD_LIMIT,
                             busy=excess is not None and excess > timing.OTHERS_LIMIT)
            tp = float(np.median(times))
        else:
            with backend.blas_threads(1):
                t = timing.measure(lambda: gru.gru_forward(p, X, h0, implicit=True, method="mgrit", threads=ranks,
                                                           **opts), repeat=repeat, number=1)
            n, tp = t.noise, t.median
        noise = noise | n
        out["sequential"].append(ts.median)
        out["parallel"].append(tp)
        out["speedup"].append(ts.median / tp)
        widen = (1 + ts.noise.spread) * (1 + n.spread)       # each median's own spread, both ways
        out["interval"].append((ts.median / tp / widen, ts.median / tp * widen))
        out["model"].append(mgrit.span_model(T, m=m, levels=levels, iters=iters, P=ranks, relax=relax)["speedup"])
    out["noise"] = noise
    return out


def layouts(T: int = 256, *, cores: int | None = None, batch: int = 16, nh: int = 64, nx: int = 8, m: int = 4,
            levels: int = 2, iters: int = 2, repeat: int = 3, timeout: float = 120.0) -> dict:
    """The seed's hybrid layout, MPI ranks x threads per rank, on this machine: MGRIT's implicit-GRU
    forward (``iters`` iterations) timed for every ``(ranks, threads)`` with ``ranks * threads <= cores``
    (``cores`` defaults to the cores this process may use), each inside its own MPI job on rank 0's clock
    (``mgrit_mpi.solve(..., ranks, threads, repeat)``, start-up excluded). Layouts needing more workers than
    cores are listed in ``"not_run"``, not run. Without MPI only ``ranks = 1`` runs, in this process.

    Returns ``{"rows": [{"ranks", "threads", "times": [s], "median", "noise"}], "not_run": [(r, t)],
    "cores", "method": "mpi" | "threads", "max_error": max |U - serial MGRIT| over the layouts}``."""
    T = check_positive_int(T, "T")
    cores = backend.cpu_count() if cores is None else check_positive_int(cores, "cores")
    repeat = check_int(repeat, "repeat", low=1)
    ok, _ = mpi_available()
    method = "mpi" if ok else "threads"
    opts = dict(m=m, levels=levels, relax="FCF", max_iter=iters, tol=0.0)
    p = gru.init_params(nx, nh, seed=0, dtype=np.float64)
    X = np.random.default_rng(T).standard_normal((T, batch, nx))
    h0 = np.zeros((batch, nh))
    with backend.blas_threads(1):
        ref = gru.gru_forward(p, X, h0, implicit=True, method="mgrit", **opts)
    wanted = [(r, t) for r in (1, 2, 4) for t in (1, 2, 4)]
    out = {"rows": [], "not_run": [], "cores": cores, "method": method, "max_error": 0.0}
    for r, t in wanted:
        if r * t > cores or (r > 1 and method != "mpi"):
            out["not_run"].append((r, t))
            continue
        if method == "mpi":
            from ..parallel import mgrit_mpi

            U, _, info = mgrit_mpi.solve({"kind": "gru", "params": p, "X": X, "h0": h0, "implicit": True}, T,
                                         ranks=r, threads=t, repeat=repeat, timeout=timeout, **opts)
            times, H = info["solve_times"], U[1:]
            n = timing.Noise(spread=_spread(times), others=info["others"])
            n.add(len(times) >= 3 and n.spread > timing.SPREAD_LIMIT, f"MPI repeats spread by {n.spread:.0%}")
            excess = None if info["others"] is None else info["others"] - (r * t - 1)
            if excess is not None:
                n.add(excess > timing.OTHERS_LIMIT, f"other processes kept {excess:.1f} core(s) busy beside the job")
        else:
            with backend.blas_threads(1):
                H = gru.gru_forward(p, X, h0, implicit=True, method="mgrit", threads=t, **opts)
                tm = timing.measure(lambda: gru.gru_forward(p, X, h0, implicit=True, method="mgrit", threads=t,
                                                            **opts), repeat=repeat, number=1)
            times, n = list(tm.times), tm.noise
        out["max_error"] = max(out["max_error"], float(np.abs(H - ref).max()))
        out["rows"].append({"ranks": r, "threads": t, "times": [float(x) for x in times],
                            "median": float(np.median(times)), "noise": n})
    return out


def fastest_layout(res: dict) -> tuple[str, str]:
    """``(decision, sentence)`` from :func:`layouts`: the fastest layout when every run was reliable and its
    slowest repeat beats every other layout's fastest repeat ("clear"); otherwise "cannot tell" and why."""
    rows = res["rows"]
    if len(rows) < 2:
        return "cannot tell", f"only {len(rows)} layout fits {res['cores']} core(s): nothing to compare"
    bad = [f"{r['ranks']}x{r['threads']}: " + "; ".join(r["noise"].reasons) for r in rows if not r["noise"].ok]
    if bad:
        return "cannot tell", "unreliable runs (" + " | ".join(bad) + ")"
    best = min(rows, key=lambda r: r["median"])
    rest = [r for r in rows if r is not best]
    if max(best["times"]) < min(min(r["times"]) for r in rest):
        return "clear", (f"{best['ranks']} rank(s) x {best['threads']} thread(s): every repeat of it took less than "
                         f"every repeat of the other layouts")
    return "cannot tell", "the repeats of the fastest layouts overlap"


def _spread(times) -> float:
    times = sorted(times)
    if len(times) < 2 or times[len(times) // 2] <= 0:
        return 0.0
    med = float(np.median(times))
    if len(times) >= 4:
        q1, q3 = np.percentile(times, [25, 75])
        return float((q3 - q1) / med)
    return float((times[-1] - times[0]) / med)


# --------------------------------------------------------------------------- training
def train_compare(runs: dict, data, *, seeds=(0, 1, 2), nh: int = 16, epochs: int = 5, batch: int = 32,
                  lr: float = 2e-2, clip: float | None = 1.0, progress=None) -> dict:
    """Train one GRU classifier per run and seed, evaluate on the test set with the *serial* forward
    of the run's cell (classic or implicit). ``runs`` maps a name to ``train_classifier`` keywords
    (``implicit``, ``method``, MGRIT options); ``data = (Xtr, ytr, Xte, yte)``.

    Returns ``{name: {"acc": [per seed], "loss": [final-epoch mean loss per seed], "seconds": [...]}}``."""
    if not isinstance(runs, dict) or not runs:
        raise TypeError(f"runs: expected a non-empty dict name -> train_classifier keywords, got {runs!r:.80}")
    for name, kw in runs.items():
        if not isinstance(kw, dict):
            raise TypeError(f"runs[{name!r}]: expected a dict of train_classifier keywords, got {type(kw).__name__}")
    if not isinstance(data, (tuple, list)) or len(data) != 4:
        raise TypeError("data: expected a tuple (Xtr, ytr, Xte, yte)")
    Xtr, ytr, Xte, yte = data
    dims: dict = {}
    Xtr = check_array(Xtr, "data[0] (Xtr)", shape=("T", "N", "nx"), dims=dims)
    Xte = check_array(Xte, "data[2] (Xte)", shape=("T", "M", "nx"), dims=dims)
    ytr = check_array(ytr, "data[1] (ytr)", shape=("N",), dims=dims, dtype="int")
    yte = check_array(yte, "data[3] (yte)", shape=("M",), dims=dims, dtype="int")
    if min(ytr.min(initial=0), yte.min(initial=0)) < 0:
        raise ValueError("data: class labels ytr/yte must be >= 0")
    seeds = _check_seq(seeds, "seeds", lambda v, n: check_int(v, n, low=0))
    nh = check_positive_int(nh, "nh", high=1 << 16)
    epochs = check_positive_int(epochs, "epochs", high=100_000)
    if progress is not None:
        check_callable(progress, "progress")
    n_classes = int(max(ytr.max(), yte.max())) + 1
    out = {}
    for name, kw in runs.items():
        res = {"acc": [], "loss": [], "seconds": []}
        for seed in seeds:
            p0 = gru.init_classifier(Xtr.shape[2], nh, n_classes, seed=seed, dtype=Xtr.dtype)
            prog = None if progress is None else (lambda it, name=name, seed=seed: progress(it, f"{name}, seed {seed}"))
            r = gru.train_classifier(p0, Xtr, ytr, epochs=epochs, batch=batch, lr=lr, clip=clip, seed=seed, progress=prog,
                                     **kw)
            pred = gru.classifier_predict(r.params, Xte, implicit=kw.get("implicit", False))
            res["acc"].append(float(np.mean(pred == yte)))
            last = [lo for lo, e in zip(r.history["loss"], r.history["epoch"]) if e == epochs - 1]
            res["loss"].append(float(np.mean(last)))
            res["seconds"].append(r.seconds)
        out[name] = res
    return out


def batch_accuracy(data, batches, *, seeds=(0, 1, 2), nh: int = 16, epochs: int = 8, lr: float = 2e-2,
                   clip: float = 1.0) -> dict:
    """Seed 002's data-parallel caveat, measured: the serial classic GRU trained with each mini-batch size in
    ``batches`` for the same number of epochs (the same samples seen; a larger batch takes fewer, larger
    steps), Adam at the same ``lr``. Returns ``{batch: {"acc": [per seed], "loss", "seconds", "updates"}}``,
    ``updates`` = optimizer steps taken (``epochs * ceil(N / batch)``)."""
    batches = _check_seq(batches, "batches", check_positive_int)
    n_train = len(data[1]) if isinstance(data, (tuple, list)) and len(data) == 4 else 0
    out = {}
    for b in batches:
        if n_train and b > n_train:
            raise ValueError(f"batches: {b} is larger than the {n_train} training sequences")
        res = train_compare({b: dict(implicit=False)}, data, seeds=seeds, nh=nh, epochs=epochs, batch=b, lr=lr,
                            clip=clip)[b]
        res["updates"] = epochs * math.ceil(n_train / b) if n_train else None
        out[b] = res
    return out
