"""JIT vs ahead-of-time: what compiling costs, measured in fresh processes (experiments layer; chapter 05).

The seed's Halide RNN got 3x faster per epoch when it switched from JIT to ahead-of-time (AOT)
compilation (its Fig. 14): its JIT version recompiled pipeline stages while training. numba is
a JIT too: the first call of an ``@njit`` function with a new signature compiles it (LLVM,
hundreds of milliseconds, seconds for ``parallel=True`` kernels); later calls in the same process
reuse the machine code. ``@njit(cache=True)`` writes that machine code to disk, so a *new*
process loads it instead of compiling -- the CPU analogue of AOT.

Both situations need a fresh Python process (a process that has compiled a function never
compiles it again), so :func:`compile_times` runs two subprocesses that share a temporary
``NUMBA_CACHE_DIR``:

1. **JIT**: the cache is empty -- the first call compiles (and writes the cache);
2. **cached**: the same code in a new process -- the first call loads the compiled code.

Each reports the import time, the first call, a second (steady) call, and -- measured, not
extrapolated -- the wall time of whole runs of ``RUN_LENGTHS`` calls counted from the first call.

``TARGETS``                                     what can be compiled: "toy", "fast_rnn"
``RUN_LENGTHS``                                 the run lengths timed in each process: 1, 10, 100 calls
``compile_times(target="toy", timeout=300)``    -> dict (see its docstring)
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from ..core.noise import noise_from
from ..core.validate import check_choice, check_float

__all__ = ["TARGETS", "RUN_LENGTHS", "compile_times", "driver_source"]

TARGETS = ("toy", "fast_rnn")
RUN_LENGTHS = (1, 10, 100)

_COURSE_ROOT = Path(__file__).resolve().parents[2]

# A small module with one fused element-wise kernel, written to a temporary file (numba's
# cache is keyed on the source file, so the function must live in a real file).
_TOY_MODULE = '''
import math
from numba import njit


@njit(cache=True, fastmath=True)
def add_tanh(z, r):
    """z <- tanh(z + r), one pass."""
    for i in range(z.shape[0]):
        for j in range(z.shape[1]):
            z[i, j] = math.tanh(z[i, j] + r[i, j])
'''

_DRIVERS = {
    "toy": """
        import sys
        sys.path.insert(0, {tmp!r})
        import numpy as np
        import toy_kernels
        z = np.ones((64, 64), np.float32); r = np.ones((64, 64), np.float32)
        call = lambda: toy_kernels.add_tanh(z, r)
    """,
    "fast_rnn": """
        import numpy as np
        import course_lib
        from course_lib.models import rnn, fast_rnn
        p = rnn.init_params(8, 8, 8, seed=0)
        X = np.full((3, 4, 8), 0.5, np.float32); Y = np.zeros((3, 4, 8), np.float32)
        call = lambda: fast_rnn.train_step(p, X, Y, 0.01)
    """,
}


def driver_source(target: str, tmp: str) -> str:
    """The Python program one measuring subprocess runs; it prints one JSON line."""
    target = check_choice(target, "target", TARGETS)
    setup = textwrap.dedent(_DRIVERS[target]).format(tmp=tmp)
    return "\n".join([
        "import json, time",
        "t0 = time.perf_counter()",
        setup,
        "t1 = time.perf_counter()",
        "call()",
        "t2 = time.perf_counter()",
        "call()",
        "t3 = time.perf_counter()",
        "run = {1: t2 - t1, 2: t3 - t1}",
        f"for k in range(3, {max(RUN_LENGTHS)} + 1):",
        "    call()",
        "    run[k] = time.perf_counter() - t1",
        f"runs = {{str(k): run[k] for k in {RUN_LENGTHS!r}}}",
        "print(json.dumps({'import_s': t1 - t0, 'first_call_s': t2 - t1, 'second_call_s': t3 - t2, 'run_s': runs}))",
    ])


def _run_once(source: str, env: dict, timeout: float) -> dict:
    proc = subprocess.run([sys.executable, "-c", source], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=str(_COURSE_ROOT))
    if proc.returncode != 0:
        raise RuntimeError(f"the measuring subprocess failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def compile_times(target: str = "toy", *, timeout: float = 300.0) -> dict:
    """First-call time with a cold cache (JIT) vs a warm cache (cached compile), each in a fresh process.

    ``target``: ``"toy"`` (one small fused kernel) or ``"fast_rnn"`` (every kernel of
    :func:`course_lib.models.fast_rnn.train_step`, on tiny arrays so the call itself is negligible).
    Returns ``{"target", "jit": {...}, "cached": {...}, "compile_s", "first_call_ratio", "run_ratio"}``
    where each of ``jit``/``cached`` holds ``import_s``, ``first_call_s``, ``second_call_s`` and
    ``run_s`` (``{"1": s, "10": s, "100": s}``: wall time of the first N calls, measured);
    ``compile_s`` is what the cache saves on the first call, ``first_call_ratio`` is
    ``jit.first_call_s / cached.first_call_s`` and ``run_ratio`` maps each run length to
    ``jit.run_s / cached.run_s`` (numba compiles once per process, so it shrinks towards 1).
    ``noise``: the warm-cache process runs three times; the spread of its longest run says whether the
    machine was steady enough to judge the ratios (and a cached first call that is not faster is noted).
    """
    target = check_choice(target, "target", TARGETS)
    timeout = check_float(timeout, "timeout", low=1.0, high=86400.0)
    with tempfile.TemporaryDirectory(prefix="course_jit_") as tmp:
        if target == "toy":
            Path(tmp, "toy_kernels.py").write_text(_TOY_MODULE)
        env = dict(os.environ)
        env["NUMBA_CACHE_DIR"] = str(Path(tmp, "numba_cache"))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_COURSE_ROOT), env.get("PYTHONPATH", "")]))
        env.pop("NUMBA_DISABLE_JIT", None)
        source = driver_source(target, tmp)
        jit = _run_once(source, env, timeout)
        cached, *again = [_run_once(source, env, timeout) for _ in range(3)]
    longest = max(cached["run_s"], key=int)
    noise = noise_from([c["run_s"][longest] for c in (cached, *again)])
    noise.add(jit["first_call_s"] <= cached["first_call_s"],
              "the cached first call was not faster than the compiling one (the cache was not used, or the "
              "machine was disturbed)")
    return {
        "target": target,
        "jit": jit,
        "cached": cached,
        "compile_s": jit["first_call_s"] - cached["first_call_s"],
        "first_call_ratio": jit["first_call_s"] / max(cached["first_call_s"], 1e-9),
        "run_ratio": {k: jit["run_s"][k] / max(cached["run_s"][k], 1e-9) for k in jit["run_s"]},
        "noise": noise,
    }
