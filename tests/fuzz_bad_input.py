"""A bounded bad-input fuzz of the course's public functions (issue 39, item 4); a script, not a test file.

    .venv/bin/python tests/fuzz_bad_input.py [NAME_FILTER ...] [--limit SECONDS]
    .venv/bin/python tests/fuzz_bad_input.py --auto algorithms.scan models.rnn ...   # scalar options of any module
    .venv/bin/python tests/fuzz_bad_input.py --old [NAME_FILTER ...]                 # the older modules' array functions

Each case is a function, a factory of valid keyword arguments (small sizes) and, per argument, its kind:
``array`` (NaN, inf, complex, integer dtype, one axis fewer / more, an empty axis, None, a string, a wrong
trailing size), ``size`` (0, -1, 2.5, True, None, "3", 10**12), ``float`` (nan, inf, -1, None, "x", 1j, True),
``choice`` ("bogus", None, 3, ""), ``bool`` (1, "yes", None), ``params`` (None, an object, a field with NaN, a
field of the wrong shape). Every call is one bad argument over a valid call. Outcomes:

* ``ok``       ValueError / TypeError / KeyError naming the argument (``bad_input.names``)
* ``unclear``  another exception, or one that does not name the argument
* ``accepted`` it returned (a silent wrong answer unless the value is legitimate -- read the list)
* ``nan``      it returned non-finite numbers
* ``slow``     it took more than ``--limit`` seconds (default 2) whatever it did

Prints one line per non-ok outcome and a summary; exit status 1 when any remain (tests cover the fixes:
``grep -rl bad_input tests``).
"""
from __future__ import annotations

import copy
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bad_input import names


# --------------------------------------------------------------------------- mutations by kind
def _array_mutations(x):
    if isinstance(x, tuple) and x and isinstance(x[0], np.ndarray):   # a data tuple: its first array, or too short
        return {"None": None, "short": x[:-1], **{f"[0]{k}": (v,) + x[1:] for k, v in _array_mutations(x[0]).items()}}
    if isinstance(x, dict):
        return {"None": None, "str": "abc", "list": [1.0]}
    x = np.asarray(x)
    out = {"None": None, "str": "abc", "list-of-str": ["a", "b"]}
    if x.dtype.kind == "f":
        for label, val in (("nan", np.nan), ("inf", np.inf)):
            y = x.copy()
            y.flat[0] = val
            out[label] = y
        out["complex"] = x.astype(np.complex128)
        out["int"] = np.ones(x.shape, np.int64)
        out["float16"] = x.astype(np.float16)
        out["float32"] = x.astype(np.float32 if x.dtype == np.float64 else np.float64)   # one dtype among several
    if x.ndim >= 1:
        out["ndim-1"] = x[..., 0] if x.ndim > 1 else np.asarray(x.flat[0])
        out["ndim+1"] = x[..., None]
        out["last+1"] = np.concatenate([x, x[..., :1]], axis=-1)
        out["empty0"] = x[:0]
        if x.ndim > 1:
            out["empty-1"] = x[..., :0]
    return out


SIZE = {"0": 0, "-1": -1, "2.5": 2.5, "True": True, "None": None, "'3'": "3", "1e12": 10**12}
FLOAT = {"nan": math.nan, "inf": math.inf, "-1": -1.0, "None": None, "'x'": "x", "1j": 1j, "True": True}
CHOICE = {"'bogus'": "bogus", "None": None, "3": 3, "''": ""}
BOOL = {"1": 1, "'yes'": "yes", "None": None}


def _params_mutations(p):
    out = {"None": None, "object": object()}
    fields = [f for f in vars(p) if isinstance(getattr(p, f), np.ndarray)]
    if fields:
        f = fields[0]
        q = copy.deepcopy(p)
        getattr(q, f).flat[0] = np.nan
        out[f"{f}=nan"] = q
        q = copy.deepcopy(p)
        setattr(q, f, getattr(q, f)[..., :-1] if getattr(q, f).shape[-1] > 1 else getattr(q, f)[..., None])
        out[f"{f}-shape"] = q
    return out


def mutations(kind, value):
    kind, _, skip = kind.partition("!")            # "size!None": None is legitimate here
    table = {"array": lambda: _array_mutations(value), "size": lambda: dict(SIZE), "float": lambda: dict(FLOAT),
             "choice": lambda: dict(CHOICE), "bool": lambda: dict(BOOL), "params": lambda: _params_mutations(value)}[kind]()
    for s in skip.split(",") if skip else ():
        table.pop(s, None)
    return table


# --------------------------------------------------------------------------- the cases
def _cases():
    from course_lib.algorithms import delta_rule as dr, linear_attention as la, mgrit
    from course_lib.core import forkjoin, sysload, timing
    from course_lib.experiments import linear_attention as xla, mgrit_bias, newton_kstar as nk
    from course_lib.models import diag_gru, lstm_persistent as lp, para_lstm
    from course_lib.parallel import mpi_pingpong, mpi_scan

    def la_args(per_channel=False):
        q, k, v, d = la.random_problem(6, 1, 2, 4, per_channel=per_channel, dtype="float64")
        return dict(q=q, k=k, v=v, decay=d)

    def dr_args():
        q, k, v, b = dr.random_problem(6, 1, 2, 4, dtype="float64")
        return dict(q=q, k=k, v=v, beta=b)

    arr4 = {a: "array" for a in ("q", "k", "v", "decay")}
    G = np.cumsum(np.log(np.full((2, 5), 0.9)), axis=-1)
    chunks = lambda: dict(Q=np.ones((2, 5, 3)), K=np.ones((2, 5, 3)), V=np.ones((2, 5, 4)), G=G.copy())  # noqa: E731
    pl = para_lstm.init_params(3, 4)
    X = np.random.default_rng(0).standard_normal((5, 2, 3))
    S = para_lstm.forward(pl, X)
    dg = diag_gru.init_params(3, 4)
    rng = np.random.default_rng(1)
    H4 = 8
    W_ih, W_hh = rng.standard_normal((4 * H4, 3)), rng.standard_normal((4 * H4, H4)) * 0.1
    b = np.zeros(4 * H4)
    Xp = rng.standard_normal((5, 2, 3))
    h0, c0 = np.zeros((2, H4)), np.zeros((2, H4))
    Hf, Cf, Af = lp.forward(W_ih, W_hh, b, b, Xp, h0, c0)
    step = mgrit.dahlquist_step(-1.0, 0.1)
    U = np.ones(9)
    return [
        # linear attention
        (la.gated_linear_recurrence, lambda: {**la_args(), "method": "chunked"},
         {**arr4, "method": "choice", "chunk": "size!None", "threads": "size!None", "return_state": "bool",
          "S0": "array!None"}),
        (la.gated_linear_recurrence, lambda: {**la_args(True), "method": "scan"}, {**arr4, "threads": "size!None"}),
        (la.recurrence_float64, la_args, {**arr4, "return_state": "bool"}),
        (la.check_inputs, la_args, arr4),
        (la.decay_mask, lambda: {"G": G.copy()}, {"G": "array", "dtype": "choice"}),
        (la.intra_chunk, chunks, {"Q": "array", "K": "array", "V": "array", "G": "array"}),
        (la.chunk_states, lambda: {**{k: v for k, v in chunks().items() if k != "Q"}, "per_channel": False},
         {"K": "array", "V": "array", "G": "array", "per_channel": "bool"}),
        (la.chunked_flops, lambda: dict(T=10, d_k=4, d_v=4, chunk=4), {"T": "size", "d_k": "size", "chunk": "size"}),
        (la.default_chunk, lambda: dict(T=10, d_k=4), {"T": "size", "d_k": "size"}),
        (la.random_problem, lambda: dict(T=4, d_k=4), {"T": "size", "batch": "size", "heads": "size", "d_k": "size",
                                                       "low": "float", "high": "float", "per_channel": "bool",
                                                       "seed": "size!0", "dtype": "choice"}),
        (xla.chunk_sweep, lambda: dict(T=32, d=8, chunks=(8,), repeat=1, peak=1.0),
         {"T": "size", "d": "size", "repeat": "size", "peak": "float!None", "seed": "size!0"}),
        (xla.matmul_sweep, lambda: dict(T=32, chunk=8, d=8, repeat=1), {"T": "size", "chunk": "size", "d": "size"}),
        (xla.methods_vs_T, lambda: dict(sizes=(16,), d=8, repeat=1, peak=1.0),
         {"d": "size", "chunk": "size!None", "methods": "choice", "max_scan_elements": "size"}),
        (xla.gemm_peak, lambda: dict(n=64, repeat=1), {"threads": "size!None", "n": "size", "repeat": "size"}),
        # delta rule
        (dr.delta_rule, lambda: {**dr_args(), "method": "chunked"},
         {"q": "array", "k": "array", "v": "array", "beta": "array", "method": "choice", "chunk": "size!None",
          "return_state": "bool", "S0": "array!None"}),
        (dr.recurrence_float64, dr_args, {"q": "array", "beta": "array", "return_state": "bool"}),
        (dr.wy_representation, lambda: dict(K=np.ones((5, 3)) * 0.3, V=np.ones((5, 2)), beta=np.full(5, 0.5)),
         {"K": "array", "V": "array", "beta": "array"}),
        (dr.scan_price, lambda: dict(T=64, d_k=4, d_v=4), {"T": "size", "d_k": "size", "chunk": "size", "P": "size"}),
        (dr.random_problem, lambda: dict(T=4), {"T": "size", "d_k": "size", "d_v": "size!None", "dtype": "choice"}),
        # MPI (every one must fail before mpiexec starts)
        (mpi_scan.linear_recurrence_mpi, lambda: dict(a=np.full((6, 2), 0.5), x=np.ones((6, 2)), timeout=0.001),
         {"a": "array", "x": "array", "ranks": "size", "h0": "array!None"}),
        (mpi_scan.gated_linear_recurrence_mpi, lambda: {**la_args(), "timeout": 0.001},
         {**arr4, "ranks": "size", "chunk": "size!None"}),
        (mpi_scan.matrix_recurrence_mpi, lambda: dict(A=np.full((6, 2, 2), 0.2), b=np.ones((6, 2)), timeout=0.001),
         {"A": "array", "b": "array", "ranks": "size"}),
        (mpi_pingpong.pingpong, lambda: dict(sizes=(8, 16, 32), repeat=1, timeout=0.001),
         {"repeat": "size", "timeout": "float"}),
        (mpi_pingpong.fit, lambda: dict(sizes=(8, 16, 32), seconds=(1e-6, 2e-6, 3e-6)),
         {"sizes": "array", "seconds": "array"}),
        # models
        (para_lstm.forward, lambda: dict(params=pl, X=X.copy()),
         {"params": "params", "X": "array", "h0": "array!None", "method": "choice", "init": "choice"}),
        (para_lstm.solve, lambda: dict(params=pl, X=X.copy(), iters=3),
         {"params": "params", "X": "array", "iters": "size!None,0", "tol": "float!None", "method": "choice"}),
        (para_lstm.backward, lambda: dict(params=pl, X=X.copy(), S=S.copy(), dS=np.ones_like(S)),
         {"params": "params", "S": "array", "dS": "array", "method": "choice"}),
        (para_lstm.jacobian_blocks, lambda: dict(params=pl, Sprev=S.copy(), GI=np.ones((5, 2, 16))),
         {"params": "params", "Sprev": "array", "GI": "array"}),
        (para_lstm.system, lambda: dict(params=pl), {"params": "params"}),
        (para_lstm.init_params, lambda: dict(nx=3, nh=4), {"nx": "size", "nh": "size", "seed": "size!0",
                                                           "recurrent_scale": "float", "dtype": "choice"}),
        (diag_gru.forward, lambda: dict(params=dg, X=X.copy(), method="quasi", iters=2),
         {"params": "params", "X": "array", "iters": "size!None,0", "tol": "float!None"}),
        (diag_gru.init_params, lambda: dict(nx=3, nh=4), {"nx": "size", "nh": "size", "dtype": "choice"}),
        (lp.forward, lambda: dict(W_ih=W_ih, W_hh=W_hh, b_ih=b, b_hh=b, X=Xp, h0=h0, c0=c0),
         {n: "array" for n in ("W_ih", "W_hh", "b_ih", "b_hh", "X", "h0", "c0")}),
        (lp.backward, lambda: dict(W_ih=W_ih, W_hh=W_hh, X=Xp, h0=h0, c0=c0, H=Hf, C=Cf, A=Af.copy(),
                                   dH=np.ones_like(Hf), dh=np.zeros_like(h0), dc=np.zeros_like(c0)),
         {n: "array" for n in ("W_hh", "X", "H", "C", "A", "dH", "dh", "dc")}),
        (lp.gemm_nt, lambda: dict(X=np.ones((5, 3)), W=np.ones((4, 3)), out=np.empty((5, 4))),
         {"X": "array", "W": "array", "out": "array"}),
        (lp.transpose_into, lambda: dict(src=np.ones((5, 3)), dst=np.empty((3, 5))), {"src": "array", "dst": "array"}),
        (lp.step_products, lambda: dict(W_hh=W_hh, h=h0 + 0.5, z=np.empty((2, 4 * H4))),
         {"W_hh": "array", "h": "array", "z": "array"}),
        (lp.steps_forward, lambda: dict(W_hh=W_hh, A=np.zeros((5, 2, 4 * H4)), bias=b, h0=h0, c0=c0,
                                        H=np.empty((5, 2, H4)), C=np.empty((5, 2, H4)), z=np.empty((2, 4 * H4))),
         {n: "array" for n in ("W_hh", "A", "bias", "h0", "c0", "H", "C", "z")}),
        # experiments
        (nk.cell_system, lambda: dict(cell="diag_gru", T=8), {"cell": "choice", "T": "size", "nh": "size",
                                                              "scale": "float", "dtype": "choice"}),
        (nk.measure, lambda: dict(cell="diag_gru", T=8), {"cell": "choice", "T": "size", "tol": "float",
                                                          "method": "choice!None", "max_iter": "size!None"}),
        (nk.k_star, lambda: dict(cell="diag_gru", Ts=(8,)), {"Ts": "array", "tol": "float", "max_iter": "size"}),
        (nk.fixed_vs_tolerance, lambda: dict(T=8), {"cell": "choice", "T": "size", "K": "size!0", "tol": "float!None"}),
        (nk.iteration_seconds, lambda: dict(nhs=(4,), T=8), {"nhs": "array", "T": "size", "batch": "size"}),
        (mgrit_bias.gradient_gap, lambda: _gap_args(), {"params": "params", "X": "array", "y": "array"}),
        (mgrit_bias.train_monitored, lambda: dict(data=_data(), epochs=1, nh=4, probe=4, batch=4),
         {"data": "array", "mode": "choice", "iters": "size", "threshold": "float", "epochs": "size",
          "lr": "float", "clip": "float!None", "m": "size", "levels": "size"}),
        # core
        (forkjoin.Team, lambda: dict(threads=2), {"threads": "size"}),
        (sysload.settle, lambda: dict(window=0.01, limit=0.05), {"window": "float", "limit": "float",
                                                                  "pids": "array"}),
        (sysload.process_run_seconds, lambda: dict(pid=1), {"pid": "size"}),
        (sysload.threads_that_ran, lambda: dict(before={}, after={}, wall=1.0), {"before": "array", "after": "array",
                                                                                  "wall": "float"}),
        (sysload.waited, lambda: dict(before=None, after=None), {"before": "array", "after": "array"}),
        (timing.gemm_rate, lambda: dict(n=32, repeat=1), {"n": "size", "dtype": "choice", "repeat": "size"}),
        (timing.gemv_rate, lambda: dict(m=32, k=32, repeat=1), {"m": "size", "dtype": "choice", "repeat": "size"}),
        (mgrit.c_relaxation, lambda: dict(step=step, U=U.copy(), m=4), {"U": "array", "m": "size", "level": "size!0"}),
        (mgrit.f_relaxation, lambda: dict(step=step, U=U.copy(), m=4), {"U": "array", "m": "size", "level": "size!0"}),
    ]


def _old_cases():
    """The older modules' array functions (issue 29's pass, fuzzed again)."""
    from course_lib.algorithms import activations, matmul, matrix_scan as ms, newton, scan
    from course_lib.models import gru, jacobians as jac, linear_rnn, mingru, rnn, softmax_rnn
    from course_lib.parallel import deer, inference

    rng = np.random.default_rng(5)
    a, x, h0 = scan.random_problem(16, 3, seed=1, dtype="float64")
    A, b, hA = ms.random_problem(8, 3)
    sc = {"a": "array", "x": "array", "h0": "array!None"}
    M1, M2 = rng.standard_normal((6, 5)), rng.standard_normal((5, 4))
    mm = {"A": "array", "B": "array"}
    X = rng.standard_normal((6, 2, 3))
    gp = gru.init_params(3, 4, dtype=np.float64)
    rp = rnn.init_params(3, 4, 2, dtype=np.float64)
    sp = softmax_rnn.init_params(3, 4, 5, dtype=np.float64)
    mp = mingru.init_params("mingru", 3, 4)
    lp = linear_rnn.init_params("sru", 3, 4)
    Whh = rng.standard_normal((4, 4)) * 0.3
    cases = [(scan.linear_recurrence, lambda m=m: dict(a=a, x=x, h0=h0, method=m), {**sc, "method": "choice"})
             for m in scan.METHODS]
    cases += [(f, lambda: dict(a=a, x=x, h0=h0), sc) for f in (scan.hillis_steele, scan.blelloch, scan.closed_form,
                                                                scan.recurrence_float64)]
    cases += [
        (scan.linear_recurrence_backward, lambda: dict(a=a, h=scan.linear_recurrence(a, x, h0), h0=h0, grad_h=np.ones_like(x)),
         {"a": "array", "h": "array", "h0": "array", "grad_h": "array"}),
        (scan.phase_steps, lambda: dict(a=a, x=x, chunks=2), {"a": "array", "chunks": "size"}),
        (ms.linear_recurrence, lambda: dict(A=A, b=b, h0=hA, method="chunked", chunks=2),
         {"A": "array", "b": "array", "h0": "array!None", "chunks": "size!None", "method": "choice", "structure": "choice"}),
        (ms.product, lambda: dict(A=A), {"A": "array"}),
        (newton.lyapunov_from_jacobians, lambda: dict(J=A), {"J": "array", "seed": "size!0"}),
        (newton.shift, lambda: dict(h0=h0, H=x), {"h0": "array", "H": "array"}),
        (activations.fast_tanh, lambda: dict(x=M1), {"x": "array"}),
        (activations.sigmoid, lambda: dict(z=M1), {"z": "array"}),
        (mingru.forward, lambda: dict(kind="mingru", params=mp, X=X), {"kind": "choice", "params": "params", "X": "array",
                                                                       "h0": "array!None", "method": "choice"}),
        (mingru.log_space_scan, lambda: dict(log_a=np.log(np.full((6, 2), 0.5)), log_b=np.zeros((6, 2))),
         {"log_a": "array", "log_b": "array"}),
        (linear_rnn.forward, lambda: dict(params=lp, X=X), {"params": "params", "X": "array", "method": "choice"}),
        (rnn.forward_step, lambda: dict(x_t=X[0], h_prev=np.zeros((2, 4)), Wxh=rp.Wxh, Whh=rp.Whh),
         {"x_t": "array", "h_prev": "array", "Wxh": "array", "Whh": "array"}),
        (rnn.forward, lambda: dict(params=rp, X=X), {"params": "params", "X": "array", "h0": "array!None"}),
        (rnn.loss, lambda: dict(Yhat=M1, Y=M1 * 0.5), {"Yhat": "array", "Y": "array"}),
        (rnn.sgd_step, lambda: dict(params=rp, grads=rp, lr=0.1), {"params": "params", "grads": "params", "lr": "float"}),
        (jac.elman_step, lambda: dict(Whh=Whh, Hprev=X[..., :1].repeat(4, -1), XW=np.ones((6, 2, 4))),
         {"Whh": "array", "Hprev": "array", "XW": "array"}),
        (jac.elman_serial_numba, lambda: dict(Wxh=rng.standard_normal((3, 4)), Whh=Whh, X=X),
         {"Wxh": "array", "Whh": "array", "X": "array", "h0": "array!None"}),
        (jac.gru_step, lambda: dict(params=gp, Hprev=np.zeros((6, 2, 4)), GI=np.ones((6, 2, 12))),
         {"params": "params", "Hprev": "array", "GI": "array", "gamma": "float"}),
        (deer.gru_forward, lambda: dict(params=gp, X=X, max_iter=8), {"params": "params", "X": "array", "tol": "float!None",
                                                                     "max_iter": "size!None", "method": "choice",
                                                                     "gamma": "float"}),
        (inference.predict, lambda: dict(params=sp, X=rng.standard_normal((6, 2, 3))),
         {"params": "params", "X": "array", "method": "choice"}),
        (inference.scatter_batch, lambda: dict(X=X, P=2), {"X": "array", "P": "size"}),
    ]
    cases += [(f, lambda: dict(A=M1, B=M2), mm) for f in (matmul.matmul_naive, matmul.matmul_ikj, matmul.matmul_tiled,
                                                         matmul.matmul_parallel)]
    return cases


def _data():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((8, 8, 2)), rng.integers(0, 2, 8), rng.standard_normal((8, 4, 2)), rng.integers(0, 2, 4))


def _gap_args():
    from course_lib.models import gru
    Xtr, ytr, _, _ = _data()
    return dict(params=gru.init_classifier(2, 4, 2), X=Xtr, y=ytr, m=2, levels=2)


# --------------------------------------------------------------------------- the run
def _finite(out) -> bool:
    if isinstance(out, dict):
        return all(_finite(v) for v in out.values())
    if isinstance(out, (tuple, list)):
        return all(_finite(v) for v in out)
    if isinstance(out, (np.ndarray, float, np.floating)):
        a = np.asarray(out)
        return a.dtype.kind not in "fc" or bool(np.isfinite(a).all())
    return True


def call(fn, kwargs, name):
    t0 = time.perf_counter()
    try:
        out = fn(**kwargs)
    except (ValueError, TypeError, KeyError) as exc:
        kind = "ok" if names(str(exc), name) else "unclear"
        return kind, f"{type(exc).__name__}: {str(exc)[:120]}", time.perf_counter() - t0
    except Exception as exc:  # every other kind is an unclear error
        return "unclear", f"{type(exc).__name__}: {str(exc)[:120]}", time.perf_counter() - t0
    dt = time.perf_counter() - t0
    return ("accepted" if _finite(out) else "nan"), f"returned {type(out).__name__}", dt


# --------------------------------------------------------------------------- --auto: scalar options of any module
#: values for required scalar arguments, by name (small sizes); a function needing anything else is skipped
REQUIRED = {"T": 8, "nt": 8, "N": 8, "n": 8, "m": 2, "k": 4, "nh": 4, "H": 4, "nx": 3, "ny": 2, "batch": 2, "B": 2,
            "d": 4, "d_k": 4, "d_v": 4, "heads": 1, "levels": 2, "P": 2, "p": 2, "threads": 2, "seed": 0, "vocab": 5,
            "V": 5, "L": 2, "layers": 2, "chunk": 4, "chunks": 2, "lam": -1.0, "dt": 0.1, "u0": 1.0, "tile": 4,
            "n_classes": 2, "block": 4, "M": 8, "K": 8, "size": 8, "steps": 4, "iters": 2, "method": None}


def _auto_cases(module_names):
    import importlib
    import inspect
    for mod_name in module_names:
        mod = importlib.import_module(f"course_lib.{mod_name}")
        for name in getattr(mod, "__all__", []):
            fn = getattr(mod, name, None)
            if not inspect.isfunction(fn):
                continue
            base, kinds = {}, {}
            try:
                params = inspect.signature(fn).parameters.values()
            except (TypeError, ValueError):
                continue
            ok = True
            for prm in params:
                if prm.kind in (prm.VAR_POSITIONAL, prm.VAR_KEYWORD):
                    continue
                default = prm.default
                if default is prm.empty:
                    if prm.name not in REQUIRED or REQUIRED[prm.name] is None:
                        ok = False
                        break
                    default = base[prm.name] = REQUIRED[prm.name]
                if isinstance(default, bool):
                    kinds[prm.name] = "bool"
                elif isinstance(default, int):
                    kinds[prm.name] = "size" + ("!0" if default == 0 else "")
                elif isinstance(default, float):
                    kinds[prm.name] = "float" + ("!-1" if default < 0 else "")
                elif isinstance(default, str) and prm.name != "dtype":
                    kinds[prm.name] = "choice"
            if ok and kinds:
                yield fn, (lambda base=base: dict(base)), kinds


def _timed(fn, kwargs, name, seconds):
    """:func:`call` with an alarm after ``seconds`` (Python code only: a compiled loop finishes first)."""
    import signal

    class Alarm(BaseException):
        pass

    def ring(*_):
        raise Alarm

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return call(fn, kwargs, name)
    except Alarm:
        return "slow", f"still running after {seconds} s", seconds
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def main(argv) -> int:
    limit = 2.0
    if "--limit" in argv:
        i = argv.index("--limit")
        limit = float(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    auto = "--auto" in argv
    argv = [a for a in argv if a != "--auto"]
    n_calls, bad = 0, []
    old = "--old" in argv
    argv = [a for a in argv if a != "--old"]
    for fn, base, kinds in (_auto_cases(argv) if auto else _old_cases() if old else _cases()):
        label = f"{fn.__module__.split('course_lib.')[-1]}.{fn.__name__}"
        if not auto and argv and not any(a in label for a in argv):
            continue
        if auto and _timed(fn, base(), "-", 10 * limit)[0] not in ("accepted", "nan"):
            print(f"skipped   {label}: its base call {base()} does not run", flush=True)
            continue
        for arg, kind in kinds.items():
            for what, value in mutations(kind, base().get(arg)).items():
                kwargs = base()
                kwargs[arg] = value
                outcome, msg, dt = _timed(fn, kwargs, arg, 10 * limit) if auto else call(fn, kwargs, arg)
                n_calls += 1
                if dt > limit:
                    outcome = f"slow {dt:.1f}s/{outcome}"
                if outcome != "ok":
                    bad.append((label, arg, what, outcome, msg))
                    print(f"{outcome:9s} {label}({arg}={what}): {msg}", flush=True)
    by = {}
    for b in bad:
        by[b[3].split("/")[-1].split()[0]] = by.get(b[3].split("/")[-1].split()[0], 0) + 1
    print(f"\n{n_calls} calls, {len(bad)} not ok: {by}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
