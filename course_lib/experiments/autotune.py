"""Pick the fastest LSTM method for a shape, once, and remember it (experiments layer; chapter 09).

EcoRNN's "optimising once and for all": every cell of every layer and time step has the same
shape, so a micro-benchmark of a few milliseconds decides the layout for a training run of hours.
The model never asks for this by itself (``lstm_forward`` computes with the method it is given);
you ask for it explicitly::

    method = autotune.best_method(B, H, nx, T, "float32")      # measured once, then cached
    lstm.lstm_forward(params, X, method=method)
    autotune.lstm_forward_tuned(params, X)                     # the same in one call

The race is between *choices*: every method on every GEMM provider this machine has
(:mod:`course_lib.algorithms.gemm`; ``"workspace@mkl"`` is the ``workspace`` method with oneMKL computing its
products, a plain name runs on numpy's BLAS). Without the ``.[fast]`` extra numpy is the only provider and the
race is the methods alone; with it, the table says which library won at this shape and pass. ``tune`` races
numpy alone unless asked (``providers=None``: all of them), and so does ``lstm_forward_tuned``.

``tune(batch, nh, nx, T, dtype, threads)`` -> :class:`Decision` (measures now, or reads the cache)
``recheck(batch, nh, nx, T, ...)``     -> a later check of the cached choice; re-tunes when another method
                                        is faster beyond the noise
``best_method(...)``                   -> the method name of that decision

Deciding is *repeat-until-decided*: the methods are timed interleaved (:func:`course_lib.core.timing.compare`,
pair ratios with 95% intervals); every method the fastest is faster than beyond doubt (the whole speed-up
interval above 1) drops out, and the rest are timed again, up to ``tries`` times. What is still undecided then
is a tie within the noise (``Decision.tied``); the fastest median among them is used.
``lstm_forward_tuned(params, X, ...)`` -> ``lstm.lstm_forward`` with the tuned method
``cache_path()`` / ``load_cache()`` / ``clear_cache()``

The decisions live in one JSON file, ``<cache dir>/lstm_autotune.json``, where the cache dir is
``$COURSE_CACHE_DIR`` when set (tests and notebooks point it to a temporary folder), else
``$XDG_CACHE_HOME/parallel-rnns-course``, else ``~/.cache/parallel-rnns-course``. Entries are keyed
by shape, dtype, threads *and machine*, so a file copied from another computer is not trusted. A
corrupt or foreign file is ignored with a warning (and replaced on the next save), never a crash.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..algorithms import gemm
from ..core import backend
from ..core.validate import (check_alloc_of, check_array, check_bool, check_choice, check_dtype, check_float,
                             check_positive_int, check_repeat, check_str, to_builtin)
from ..models import lstm
from . import lstm as lstm_experiments

__all__ = ["Decision", "tune", "recheck", "best_method", "lstm_forward_tuned", "cache_dir", "cache_path", "load_cache",
           "clear_cache", "machine_id", "shape_key", "current_threads", "FORMAT"]

FORMAT = "course_lib.experiments.autotune/1"
_FILE = "lstm_autotune.json"
_MEMO: dict = {}  # in-process: (path, key) -> Decision, so asking inside a training loop is free


@dataclass
class Decision:
    """The autotuner's answer for one key: the fastest ``best`` method and the measured table
    ``table_ms`` (milliseconds per time step of a forward pass, per method)."""

    key: str
    best: str
    table_ms: dict
    measured_now: bool = False
    probe: dict = field(default_factory=dict)
    tied: list = field(default_factory=list)       # methods the timing could not separate from ``best``
    retuned: bool = False                          # :func:`recheck` found the cached choice beaten, tuned again

    def __post_init__(self):
        check_str(self.key, "key")
        if not isinstance(self.table_ms, dict) or not self.table_ms:
            raise TypeError(f"table_ms: expected a non-empty dict method -> ms per step, got {self.table_ms!r}")
        for m, ms in self.table_ms.items():
            check_float(ms, f"table_ms[{m!r}]", low=0.0)
        check_choice(self.best, "best", tuple(self.table_ms))
        check_bool(self.measured_now, "measured_now")
        if not isinstance(self.probe, dict):
            raise TypeError(f"probe: expected a dict, got {type(self.probe).__name__}")

    @property
    def method(self) -> str:
        """The winning method (without its provider)."""
        return self.best.partition("@")[0]

    @property
    def provider(self) -> str:
        """The GEMM provider of the winning choice (``"numpy"`` for a plain method name)."""
        return self.best.partition("@")[2] or "numpy"

    def table(self) -> str:
        """The table as text, fastest first, with each choice's time as a multiple of the best's
        (labelled: a time ratio, > 1 = slower -- the course's other ratios are speed-ups)."""
        best = self.table_ms[self.best]
        w = max(11, *(len(v) for v in self.table_ms))
        rows = [f"{'method':<{w}} {'ms/step':>9} {'time / best':>12}"]
        for v, ms in sorted(self.table_ms.items(), key=lambda kv: kv[1]):
            rows.append(f"{v:<{w}} {ms:>9.3f} {ms / best:>11.2f}x" + ("  <- picked" if v == self.best else ""))
        return "\n".join(rows)


# --------------------------------------------------------------------------- where and what
def cache_dir() -> Path:
    """``$COURSE_CACHE_DIR``, else ``$XDG_CACHE_HOME/parallel-rnns-course``, else ``~/.cache/...``."""
    env = os.environ.get("COURSE_CACHE_DIR", "").strip()
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base).expanduser() / "parallel-rnns-course"


def cache_path() -> Path:
    return cache_dir() / _FILE


def machine_id() -> str:
    """A short hash of what makes timings differ between computers: CPU model, core count,
    architecture, numpy version and BLAS."""
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
    except Exception:
        blas = "?"
    text = f"{platform.machine()}|{backend.cpu_model()}|{os.cpu_count()}|numpy {np.__version__}|{blas}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def current_threads() -> int:
    """BLAS threads in use now (threadpoolctl), else numba's thread count."""
    try:
        from threadpoolctl import threadpool_info

        n = [i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"]
        if n:
            return int(max(n))
    except Exception:
        pass
    import numba

    return int(numba.get_num_threads())


def shape_key(batch: int, nh: int, nx: int, T: int, dtype="float32", threads: int | None = None,
              training: bool = False, providers=("numpy",)) -> str:
    """``"B=64,H=512,nx=512,T=100,float32,threads=2"`` (``",training"`` appended for a forward + backward
    pass, ``",providers=numpy+mkl"`` when other GEMM providers than numpy are raced) -- one cache entry per
    key and machine."""
    batch, nh, nx, T = (check_positive_int(v, n) for v, n in ((batch, "batch"), (nh, "nh"), (nx, "nx"), (T, "T")))
    dt = check_dtype(dtype, "dtype")
    threads = current_threads() if threads is None else check_positive_int(threads, "threads")
    training = check_bool(training, "training")
    provs = "+".join(gemm.check_provider(p, "providers") for p in providers)
    return (f"B={batch},H={nh},nx={nx},T={T},{dt.name},threads={threads}" + (",training" if training else "")
            + ("" if provs == "numpy" else f",providers={provs}"))


# --------------------------------------------------------------------------- the file
def _path(path) -> Path:
    if path is None:
        return cache_path()
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path: expected a file path (str or pathlib.Path), got {type(path).__name__}")
    if isinstance(path, str) and not path.strip():
        raise ValueError("path: expected a file path, got an empty string")
    return Path(path)


def load_cache(path: Path | None = None) -> dict:
    """The entries for this machine, ``{key: {"best", "table_ms", ...}}``. A missing file is
    empty; a corrupt or foreign one is ignored with a ``UserWarning``."""
    path = _path(path)
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        warnings.warn(f"autotune: ignoring the unreadable cache file {path} ({type(exc).__name__}: {exc}); "
                      f"it will be replaced", UserWarning, stacklevel=2)
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("machines"), dict):
        warnings.warn(f"autotune: ignoring {path}: not a {FORMAT} cache file (foreign or old format); "
                      f"it will be replaced", UserWarning, stacklevel=2)
        return {}
    entries = data["machines"].get(machine_id(), {})
    good = {}
    for key, e in entries.items() if isinstance(entries, dict) else ():
        why = _entry_problem(e)
        if why is None:
            good[key] = e
        else:
            warnings.warn(f"autotune: ignoring a malformed entry {key!r} in {path} ({why})", UserWarning,
                          stacklevel=2)
    return good


def _entry_problem(e) -> str | None:
    """``None`` for a well-formed entry, else what is wrong with it."""
    if not isinstance(e, dict):
        return f"expected a dict, got {type(e).__name__}"
    table = e.get("table_ms")
    if not isinstance(table, dict) or not table:
        return "table_ms: expected a non-empty dict"
    for m, ms in table.items():
        method, _, provider = str(m).partition("@")
        if method not in lstm.METHODS or (provider and provider not in gemm.PROVIDERS):
            return f"table_ms: unknown method {m!r}"
        # bool is an int in Python: true/false are not times
        if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not (0 < ms < float("inf")):
            return f"table_ms[{m!r}]: expected a positive number of milliseconds, got {ms!r}"
    if e.get("best") not in table:
        return f"best: {e.get('best')!r} is not one of the measured methods {sorted(table)}"
    if "probe" in e and not isinstance(e["probe"], dict):
        return f"probe: expected a dict, got {type(e['probe']).__name__}"
    if "tied" in e and not (isinstance(e["tied"], list) and set(e["tied"]) <= set(table)):
        return f"tied: expected a list of measured methods, got {e['tied']!r}"
    return None


def _save_entry(path: Path, key: str, entry: dict) -> None:
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
    except (OSError, ValueError):
        data = None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("machines"), dict):
        data = {"format": FORMAT, "machines": {}}
    mine = data["machines"].setdefault(machine_id(), {})
    if not isinstance(mine, dict):
        mine = data["machines"][machine_id()] = {}
    mine[key] = entry
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        # numpy integers/floats (a repeat=np.int64(3), a time from np.median) are not JSON: make them plain
        tmp.write_text(json.dumps(to_builtin(data), indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)  # atomic: a crash never leaves half a file
    except OSError as exc:
        warnings.warn(f"autotune: could not write {path} ({exc}); the decision is kept in memory only",
                      UserWarning, stacklevel=3)


def clear_cache(path: Path | None = None) -> None:
    """Delete the cache file and forget the in-process decisions."""
    path = _path(path)
    _MEMO.clear()
    if path.exists():
        path.unlink()


# --------------------------------------------------------------------------- deciding
def _race(methods, providers) -> tuple[tuple, tuple]:
    """``(choices, providers)``: the methods on every provider (default: all this machine has)."""
    if isinstance(methods, str) or not hasattr(methods, "__iter__"):
        raise TypeError(f"methods: expected a list of method names from {lstm.METHODS}, got {methods!r}")
    providers = gemm.providers() if providers is None else providers
    if isinstance(providers, str) or not hasattr(providers, "__iter__"):
        raise TypeError(f"providers: expected a list of names from {gemm.providers()}, got {providers!r}")
    providers = tuple(dict.fromkeys(gemm.check_provider(p, "providers") for p in providers))
    methods = tuple(check_choice(m, "methods", lstm.METHODS) for m in methods)
    if not methods:
        raise ValueError("methods: expected at least one method")
    if not providers:
        raise ValueError(f"providers: expected at least one of {gemm.providers()}")
    return lstm_experiments.choices(methods, providers), providers


def tune(batch: int, nh: int, nx: int, T: int = 100, dtype="float32", threads: int | None = None, *,
         methods=lstm.METHODS, force: bool = False, probe_steps: int = 10, repeat: int = 3, tries: int = 3,
         path: Path | None = None, training: bool = False, providers=("numpy",)) -> Decision:
    """The fastest method for ``X (T, B, nx)`` and ``nh`` hidden units (``training=True``: for a forward
    and backward pass, a decision of its own -- the fastest forward need not be the fastest to train).

    Reads the cache unless ``force=True``; otherwise times each method's pass (forward, or forward + backward
    with ``training=True``) over
    ``min(T, probe_steps)`` steps, repeat-until-decided (at least ``repeat`` interleaved rounds a try, up
    to ``tries`` tries, see the module's docstring), keeps the fastest and saves the table (each method's
    median from the last try it ran in). ``threads`` is part of the key (default: the BLAS threads in use
    now); it does not change the thread setting. ``providers``: the GEMM providers to race the methods on
    (default numpy's BLAS alone; ``None``: every one here, :func:`course_lib.algorithms.gemm.providers`)."""
    methods, providers = _race(methods, providers)
    key = shape_key(batch, nh, nx, T, dtype, threads, training, providers)
    force = check_bool(force, "force")
    probe_steps = check_positive_int(probe_steps, "probe_steps", high=10_000)
    repeat = check_repeat(repeat)     # a plain int from here on (JSON-safe)
    check_alloc_of(np.dtype(dtype), "the probe's inputs", steps=min(T, probe_steps), batch=batch, nx=nx)
    check_alloc_of(np.dtype(dtype), "the probe's gates", factor=4, steps=min(T, probe_steps), batch=batch, nh=nh)
    check_alloc_of(np.dtype(dtype), "the weights W_ih", factor=4, nh=nh, nx=nx)
    check_alloc_of(np.dtype(dtype), "the weights W_hh", factor=4 * nh, nh=nh)
    tries = check_positive_int(tries, "tries", high=100)
    path = _path(path)
    if not force:
        memo = _MEMO.get((str(path), key))
        if memo is None:
            entry = load_cache(path).get(key)
            if entry is not None:
                memo = _MEMO[(str(path), key)] = Decision(key, entry["best"], dict(entry["table_ms"]), False,
                                                          dict(entry.get("probe", {})), list(entry.get("tied", [])))
        if memo is not None:
            return Decision(memo.key, memo.best, dict(memo.table_ms), False, dict(memo.probe), list(memo.tied))
    steps = min(check_positive_int(T, "T"), probe_steps)
    return _measure_and_save(path, key, (batch, nh, nx, steps, np.dtype(dtype).name, training), methods, repeat,
                             tries)


def _decide(shape, methods, repeat: int, tries: int):
    """Repeat-until-decided: ``(best, table_ms, tied, rounds)``. Each try times the methods still in the
    race interleaved; a method the fastest beats beyond the noise ("yes": the whole speed-up interval
    above 1) leaves the race. ``table_ms`` keeps each method's latest median (ms per step)."""
    batch, nh, nx, steps, dtype, training = shape
    race, rounds, tried = tuple(methods), 0, []
    for _ in range(tries):
        res = lstm_experiments.method_times(batch, nh, nx, steps, methods=race, dtype=dtype, repeat=repeat,
                                            backward=training)
        best, cmp = str(res["best"]), res.get("comparison")
        tried.append((to_builtin(dict(res["ms_per_step"])), best))
        if cmp is not None:
            rounds += len(cmp.timings[best].times)
        undecided = [m for m in race if m != best and (cmp is None or cmp.faster(best, over=m) != "yes")]
        if cmp is None or not undecided:
            return best, _table(tried), [], rounds
        race = (best, *undecided)
    return best, _table(tried), undecided, rounds


def _table(tried) -> dict:
    """One table from the tries ``[(ms_per_step, best), ...]``: the last try's times; a method that left the
    race earlier gets its ratio to that try's fastest times the fastest's time in the table, so the whole
    table is on the last try's scale (a machine a little faster in the last try cannot make a method that
    lost look faster than the winner)."""
    table = dict(tried[-1][0])
    for ms, best in reversed(tried[:-1]):
        for m, v in ms.items():
            if m not in table:
                table[m] = v / ms[best] * table[best]
    return table


def _measure_and_save(path, key, shape, methods, repeat, tries, retuned=False) -> Decision:
    t0 = time.perf_counter()
    best, table, tied, rounds = _decide(shape, methods, repeat, tries)
    probe = {"steps": shape[3], "repeat": repeat, "rounds": rounds, "seconds": round(time.perf_counter() - t0, 4),
             "when": time.strftime("%Y-%m-%dT%H:%M:%S")}
    d = Decision(key, best, table, True, probe, tied, retuned)
    _save_entry(path, key, {"best": best, "table_ms": table, "probe": probe, "tied": tied})
    _MEMO[(str(path), key)] = Decision(key, best, dict(table), False, probe, list(tied))
    return d


def recheck(batch: int, nh: int, nx: int, T: int = 100, dtype="float32", threads: int | None = None, *,
            methods=lstm.METHODS, probe_steps: int = 10, repeat: int = 3, tries: int = 3,
            path: Path | None = None, training: bool = False, providers=("numpy",)) -> Decision:
    """A later check of the cached choice (tunes first when nothing is cached): the cached best is timed
    against ``methods`` again, interleaved; when some method is faster than it *beyond the noise* (the
    pair speed-up's whole interval above 1), the shape is tuned again (repeat-until-decided) and saved --
    ``Decision.retuned`` is then True. Within the noise the cached choice stays (a measurement at a noisy
    moment cannot overturn it, and neither can one that agrees)."""
    d = tune(batch, nh, nx, T, dtype, threads, methods=methods, probe_steps=probe_steps, repeat=repeat,
             tries=tries, path=path, training=training, providers=providers)
    if d.measured_now:
        return d
    methods = tuple(dict.fromkeys((d.best, *_race(methods, providers)[0])))
    steps = min(check_positive_int(T, "T"), check_positive_int(probe_steps, "probe_steps"))
    res = lstm_experiments.method_times(batch, nh, nx, steps, methods=methods, dtype=np.dtype(dtype).name,
                                        repeat=check_positive_int(repeat, "repeat"), backward=training)
    cmp = res.get("comparison")
    beaten = [m for m in methods if m != d.best and cmp is not None and cmp.faster(m, over=d.best) == "yes"]
    if not beaten:
        return d
    shape = (batch, nh, nx, steps, np.dtype(dtype).name, training)
    return _measure_and_save(_path(path), d.key, shape, methods, repeat, check_positive_int(tries, "tries"),
                             retuned=True)


def best_method(batch: int, nh: int, nx: int, T: int = 100, dtype="float32", threads: int | None = None, *,
                training: bool = False, providers=("numpy",)) -> str:
    """The fastest method for this shape here (to train with, ``training=True``): cached, else measured once
    now (and cached). Raced on numpy's BLAS unless ``providers`` says otherwise (``None``: every provider
    here); the method name comes back without its provider (``tune(...).provider`` has it)."""
    return tune(batch, nh, nx, T, dtype, threads, training=training, providers=providers).method


def lstm_forward_tuned(params, X, h0=None, c0=None, *, return_cache: bool = False, providers=("numpy",)):
    """:func:`course_lib.models.lstm.lstm_forward` with the fastest method *and provider* for ``X``'s shape and
    dtype (:func:`tune` over ``providers``, numpy's BLAS unless asked, ``None``: every one here; the first call for a shape measures and writes the cache file; later calls only read it)."""
    X = check_array(X, "X", ndim=3)
    return_cache = check_bool(return_cache, "return_cache")
    lstm.check_params(params, X.shape[2])
    T, B, nx = X.shape
    d = tune(B, params.nh, nx, T, params.dtype, providers=providers)
    return lstm.lstm_forward(params, X, h0, c0, method=d.method, return_cache=return_cache, provider=d.provider)
