"""What this machine has, and which backend CUDA kernels run on (core folder).

The one decision that must happen early: numba reads ``NUMBA_ENABLE_CUDASIM`` once, when it
is first imported. So this module decides -- *without importing numba* -- whether a usable GPU
is present. With no GPU it sets ``NUMBA_ENABLE_CUDASIM=1`` and every ``@cuda.jit`` kernel in the
course runs in numba's CUDA simulator (same code, on the CPU, slowly). With a GPU the same
kernels run for real. ``import course_lib`` imports this module first.

Public API
----------
``cuda_mode()``   -> ``"gpu"`` or ``"simulator"``
``gpu_available()`` -> bool
``report()``      -> a :class:`Report` (a dict that pretty-prints itself)
``set_threads(n)`` sets numba's and the BLAS library's thread counts together
``get_threads()`` -> current numba thread count
``xp()``          -> ``cupy`` when a GPU is usable, else ``numpy``
``mpi_available()`` -> ``(bool, reason)``
``simd_bytes()`` / ``simd_lanes(itemsize)`` the vector width of the code numba compiles here (read from its
                  machine code), ``cpu_simd_bytes()`` the widest vectors the CPU's flags say it supports
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
import warnings
from functools import lru_cache

from . import platform_facts

__all__ = [
    "cuda_mode",
    "detect_gpu",
    "gpu_available",
    "report",
    "versions",
    "Report",
    "set_threads",
    "get_threads",
    "on_threads",
    "blas_threads",
    "max_threads",
    "xp",
    "mpi_available",
    "mpiexec_path",
    "mpiexec_name",
    "cpu_count",
    "cores_text",
    "cpu_model",
    "blas_vector_bits",
    "simd_bytes",
    "simd_lanes",
    "cpu_simd_bytes",
    "code_vector",
    "vector_bits_from_features",
]


# --------------------------------------------------------------------------- GPU detection
def _module_installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


@lru_cache(maxsize=1)
def detect_gpu() -> tuple[bool, str]:
    """(usable, name-or-reason). Never imports numba."""
    if os.environ.get("COURSE_FORCE_SIMULATOR") == "1":
        return False, "COURSE_FORCE_SIMULATOR=1"
    if _module_installed("cupy"):
        try:
            import cupy

            if cupy.cuda.is_available():
                props = cupy.cuda.runtime.getDeviceProperties(0)
                name = props["name"]
                return True, name.decode() if isinstance(name, bytes) else str(name)
            return False, "CuPy is installed but reports no CUDA device"
        except Exception as exc:  # a broken driver must not break the course
            return False, f"CuPy could not reach a GPU ({type(exc).__name__})"
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run(
                [smi, "--query-gpu=name", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=10,
            )
            names = [line.strip() for line in out.stdout.splitlines() if line.strip()]
            if out.returncode == 0 and names:
                return True, names[0]
        except (OSError, subprocess.SubprocessError):
            pass
        return False, "nvidia-smi found no usable GPU"
    return False, "no CUDA driver (no CuPy GPU, no nvidia-smi)"


def _decide_cuda_mode() -> str:
    """Set NUMBA_ENABLE_CUDASIM before numba is imported; return the mode."""
    forced = os.environ.get("NUMBA_ENABLE_CUDASIM")
    if forced is not None:
        return "simulator" if forced == "1" else "gpu"
    usable, _ = detect_gpu()
    if usable:
        return "gpu"
    if "numba" in sys.modules:
        warnings.warn(
            "numba was imported before course_lib, so the CUDA simulator could not be switched on; "
            "CUDA kernels will fail without a GPU. Import course_lib first (or set NUMBA_ENABLE_CUDASIM=1).",
            RuntimeWarning,
            stacklevel=3,
        )
        return "unavailable"
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    return "simulator"


_CUDA_MODE = _decide_cuda_mode()


def cuda_mode() -> str:
    """``"gpu"`` (kernels run on a real GPU), ``"simulator"`` (numba's CUDA simulator on the CPU),
    or ``"unavailable"`` (numba was imported too early and there is no GPU)."""
    return _CUDA_MODE


def gpu_available() -> bool:
    """True when a real CUDA GPU is usable."""
    return _CUDA_MODE == "gpu"


def xp():
    """The array module to use: ``cupy`` with a usable GPU, otherwise ``numpy``."""
    if gpu_available() and _module_installed("cupy"):
        import cupy

        return cupy
    import numpy

    return numpy


# --------------------------------------------------------------------------- threads
def cpu_count() -> int:
    """Cores this process may use (respects CPU affinity / cgroup limits where visible; else ``os.cpu_count()``)."""
    return platform_facts.usable_cpus()


def cores_text(n: int | None = None) -> str:
    """``"1 core"`` or ``"2 cores"``: ``n`` cores (default: :func:`cpu_count`), for a line a one-core reader reads."""
    n = cpu_count() if n is None else n
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n: expected a core count >= 1, got {n!r}")
    return f"{n} core" + ("s" if n != 1 else "")


def max_threads() -> int:
    """The most threads :func:`set_threads` can use here: the cores, capped by the thread count numba
    was started with (``NUMBA_NUM_THREADS``) -- thread sweeps go from 1 to this."""
    import numba

    return max(1, min(cpu_count(), int(numba.config.NUMBA_NUM_THREADS)))


def get_threads() -> int:
    """numba's current thread count."""
    import numba

    return int(numba.get_num_threads())


def on_threads(n: int, fn):
    """``fn`` wrapped to run with ``n`` numba threads and then restore the previous count (switching is
    cheap, so the wrapper may sit inside a timed call). ``n`` is checked like :func:`set_threads`'s."""
    from .validate import check_int
    import numba

    n = check_int(n, "n", low=1, high=int(numba.config.NUMBA_NUM_THREADS))

    def run():
        old = numba.get_num_threads()
        numba.set_num_threads(n)
        try:
            return fn()
        finally:
            numba.set_num_threads(old)
    return run


_BLAS_CONTROLLER = None


def blas_loaded() -> None:
    """Tell :func:`blas_threads` that a BLAS library was loaded after its first use (e.g. oneMKL or BLIS
    through ``algorithms.gemm``): the next block scans the loaded libraries again, so that it limits the new
    one's pool too, instead of only the pools it saw first."""
    global _BLAS_CONTROLLER
    _BLAS_CONTROLLER = None


@contextlib.contextmanager
def blas_threads(n: int | None):
    """``with blas_threads(n):`` -- the BLAS library (numpy's matrix products) uses ``n`` threads inside the
    block, and the thread count it had before is back after it (threadpoolctl; a no-op without it).
    ``n=None`` leaves the count as it is (a no-op block), for callers whose limit is optional.

    Small GEMMs and GEMVs are faster and steadier on one BLAS thread, and a worker that is itself one of
    several threads must not start more. The threadpoolctl controller is made once: making it scans the
    loaded libraries, which costs far more than one small product."""
    from .validate import check_int

    if n is None:
        yield
        return
    n = check_int(n, "n", low=1)
    global _BLAS_CONTROLLER
    if _BLAS_CONTROLLER is None:
        try:
            import numpy  # noqa: F401  (loads the BLAS so threadpoolctl can see it)
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - threadpoolctl is a dependency
            yield
            return
        _BLAS_CONTROLLER = ThreadpoolController()
    with _BLAS_CONTROLLER.limit(limits=n, user_api="blas"):
        yield


def set_threads(n: int) -> int:
    """Use ``n`` threads in numba's parallel loops *and* in the BLAS library; returns ``n``.

    ``n`` must be between 1 and the number of threads numba was started with
    (``NUMBA_NUM_THREADS``, by default the number of cores).
    """
    from .validate import check_int
    import numba

    n = check_int(n, "n", low=1, high=int(numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(n)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=n, user_api="blas")
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency
        pass
    return n


# --------------------------------------------------------------------------- MPI
def mpiexec_path() -> str | None:
    """``mpiexec`` next to this Python (the ``mpi`` extra's mpich wheel) or on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.exists(here):
        return here
    return shutil.which("mpiexec")


def mpi_available() -> tuple[bool, str]:
    """(True, the mpiexec path) when mpi4py imports and an mpiexec is found, else (False, reason)."""
    if not _module_installed("mpi4py"):
        return False, "mpi4py is not installed (pip install -e '.[mpi]')"
    exe = mpiexec_path()
    if exe is None:
        return False, "mpi4py is installed but no mpiexec was found"
    return True, exe


def mpiexec_name(exe: str) -> str:
    """A generic name for the launcher at ``exe`` (for printed reports, which end up in committed
    notebook outputs): ``mpiexec (in this Python's environment)`` or ``mpiexec (on PATH)`` -- never a
    machine's path."""
    if not isinstance(exe, str) or not exe:
        raise TypeError(f"exe: expected the path of an mpiexec, got {exe!r}")
    where = "in this Python's environment" if os.path.dirname(exe) == os.path.dirname(sys.executable) else "on PATH"
    return f"{os.path.basename(exe)} ({where})"


# --------------------------------------------------------------------------- report
def cpu_model() -> str:
    """The CPU's model name (Linux /proc/cpuinfo, macOS sysctl, Windows ``platform.processor()``), else
    "unknown here (...)" saying why (:mod:`course_lib.core.platform_facts`)."""
    return platform_facts.cpu_model() or platform_facts.unknown("the CPU's model name")


@lru_cache(maxsize=1)
def cache_sizes() -> dict:
    """Data-cache sizes in bytes of CPU 0: ``{"L1d": ..., "L2": ..., "L3": ...}`` (L3 usually shared).

    Read from sysfs on Linux and sysctl on macOS (:func:`course_lib.core.platform_facts.cache_sizes`); an empty
    dict where the OS does not say."""
    return platform_facts.cache_sizes()


def _simd_flags() -> str:
    """The SIMD flags that matter here ("sse4_2 avx avx2 fma"), "NEON" on ARM, or "unknown here (...)"."""
    flags = platform_facts.cpu_flags()
    if platform.machine().lower() in ("arm64", "aarch64") and not (flags or set()) & {"sse4_2", "avx"}:
        return "NEON (128-bit)"
    if flags is None:
        return platform_facts.unknown("the CPU's flags")
    found = [f for f in ("sse4_2", "avx", "avx2", "fma", "avx512f") if f in flags]
    return " ".join(found) or "none of sse4_2/avx/avx2/fma/avx512f"


def cpu_simd_bytes() -> int:
    """Width in bytes of the widest float vectors this CPU *supports*, read from its flags: 64 with AVX-512,
    32 with AVX/AVX2, else 16 (SSE/NEON). What the compiled code uses may be narrower: :func:`simd_bytes`."""
    flags = _simd_flags().split()
    return 64 if "avx512f" in flags else 32 if ("avx2" in flags or "avx" in flags) else 16


_REG_BITS = {"zmm": 512, "ymm": 256, "xmm": 128}


def _widest_register(asm: str) -> tuple[str, int] | None:
    """``(register, bits)`` of the widest vector register used by a packed float32 multiply/add/FMA in ``asm``
    (x86: zmm/ymm/xmm; AArch64 NEON: ``v0.4s``), None when no such instruction is found."""
    best = None
    for line in asm.splitlines():
        parts = line.split()
        if not parts:
            continue
        op = parts[0]
        if op.startswith(("vfmadd", "vfnmadd", "vmulps", "vaddps", "mulps", "addps")) and op.endswith("ps"):
            regs = [r for r in _REG_BITS if f"%{r}" in line or f" {r}" in line]
            if regs:
                reg = max(regs, key=_REG_BITS.get)
                if best is None or _REG_BITS[reg] > best[1]:
                    best = (reg, _REG_BITS[reg])
        elif op in ("fmla", "fmul", "fadd") and ".4s" in line and (best is None or best[1] < 128):
            best = ("v (NEON)", 128)
    return best


def vector_bits_from_features(features: str) -> int:
    """The vector width (bits) LLVM generates for an x86 feature string such as numba's
    ``+avx2,+avx512f,...``: 512 with ``+avx512f``, 256 with ``+avx``/``+avx2``, else 128 -- and at most 256
    when ``+prefer-256-bit`` is set (LLVM's tuning on several AVX-512 Intel CPUs, where a loop then uses
    ymm registers although zmm exist). The fallback of :func:`code_vector` when the machine code cannot be read."""
    if not isinstance(features, str):
        raise TypeError(f"features: expected an LLVM feature string such as '+avx2,+fma', got {type(features).__name__}")
    on = {f[1:].strip() for f in features.split(",") if f.strip().startswith("+")}
    bits = 512 if "avx512f" in on else 256 if ("avx" in on or "avx2" in on) else 128
    return min(bits, 256) if "prefer-256-bit" in on else bits


@lru_cache(maxsize=1)
def code_vector() -> dict:
    """The vectors of the code that runs here: numba compiles a float32 multiply-add loop (no disk cache,
    under a second) and its machine code is read. ``{"register": "zmm" | "ymm" | "xmm" | ...,
    "bits": 512 | 256 | 128, "source": how it was found}``. Where the code cannot be read, LLVM's target
    features as numba uses them decide (:func:`vector_bits_from_features`); where even that fails, the CPU's
    flags (:func:`cpu_simd_bytes`). This, not the CPU's flags, is the width SIMD lanes are counted in: LLVM
    emits 256-bit code on some AVX-512 CPUs (``prefer-256-bit``)."""
    try:
        import numpy as np  # noqa: F401
        from numba import float32, njit

        def kernel(a, b, out):
            for i in range(out.shape[0]):
                out[i] = a[i] * b[i] + out[i]

        fn = njit(fastmath=True, cache=False)(kernel)
        fn.compile((float32[::1], float32[::1], float32[::1]))
        found = _widest_register("\n".join(fn.inspect_asm().values()))
        if found is not None:
            return {"register": found[0], "bits": found[1], "source": "numba's machine code for a float32 loop"}
    except Exception:  # pragma: no cover - a broken toolchain must not break the report
        pass
    try:
        from numba.core import config
        import llvmlite.binding as llvm

        features = config.CPU_FEATURES or llvm.get_host_cpu_features().flatten()
        if "+sse" in features or "+avx" in features:
            bits = vector_bits_from_features(features)
            return {"register": {512: "zmm", 256: "ymm"}.get(bits, "xmm"), "bits": bits,
                    "source": "LLVM's target features as numba uses them"}
    except Exception:  # pragma: no cover
        pass
    bits = 8 * cpu_simd_bytes()
    return {"register": None, "bits": bits, "source": "the CPU's flags (the machine code could not be read)"}


def simd_bytes() -> int:
    """Width in bytes of the float vectors the code compiled here uses (:func:`code_vector`): 64 for zmm
    (16 float32 lanes), 32 for ymm (8 lanes), 16 for xmm/NEON (4 lanes) -- never more than the CPU supports
    (:func:`cpu_simd_bytes`). On an AVX-512 CPU whose compiler prefers 256-bit code this is 32."""
    return min(code_vector()["bits"] // 8, cpu_simd_bytes())


def simd_lanes(itemsize: int = 4) -> int:
    """SIMD lanes of ``itemsize``-byte floats in one vector of the code compiled here: ``simd_bytes() // itemsize``."""
    from .validate import check_positive_int

    itemsize = check_positive_int(itemsize, "itemsize", high=64)
    return max(1, simd_bytes() // itemsize)


def _blas_info() -> tuple[str, int | None]:
    try:
        from threadpoolctl import threadpool_info
        import numpy  # noqa: F401  (loads the BLAS so threadpoolctl can see it)

        for pool in threadpool_info():
            if pool.get("user_api") == "blas":
                name = pool.get("internal_api", "blas")
                arch = pool.get("architecture")
                label = f"{name} {pool.get('version') or ''}".strip()
                if arch:
                    label += f" ({arch})"
                return label, pool.get("num_threads")
    except Exception:  # pragma: no cover
        pass
    return "unknown", None


# the packages whose versions a run prints (notebook 00, every recording's machine facts, `report`)
VERSIONED = ("numpy", "numba", "llvmlite", "halide", "matplotlib", "ipywidgets", "jupyterlab", "threadpoolctl")


def versions() -> dict:
    """The versions that run here, e.g. ``{"Python": "3.11.7", "numpy": "2.4.6", ..., "BLAS": "openblas 0.3.30"}``:
    Python, each of :data:`VERSIONED` that is installed (the imported module's own version where it is loaded),
    and the BLAS numpy calls (threadpoolctl's name and version, or "unknown")."""
    from importlib import metadata

    out = {"Python": platform.python_version()}
    for name in VERSIONED:
        try:
            out[name] = getattr(sys.modules.get(name), "__version__", None) or metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    out["BLAS"] = _blas_info()[0].split(" (")[0]
    return out


# OpenBLAS kernel families (threadpoolctl's "architecture") and the vector width their GEMM uses
_KERNEL_BITS = {"skylakex": 512, "cooperlake": 512, "sapphirerapids": 512, "zen": 256, "haswell": 256,
                "sandybridge": 256, "nehalem": 128, "core2": 128, "prescott": 128}


def blas_vector_bits() -> dict:
    """Does numpy's BLAS use the CPU's widest vectors? ``{"blas", "kernel", "kernel_bits", "cpu_bits",
    "coretype_env"}``: the GEMM kernel family the BLAS picked (OpenBLAS: threadpoolctl's
    ``architecture``; None when the BLAS does not say), the vector width that family computes with
    (None when unknown), the CPU's widest float vectors (512 with AVX-512, 256 with AVX/AVX2, else 128)
    and ``OPENBLAS_CORETYPE`` when that variable forces the family. A BLAS whose kernels are narrower
    than the CPU's vectors has a lower GEMM peak than a library that uses them all (oneDNN in torch)."""
    blas, _ = _blas_info()
    kernel = None
    try:
        from threadpoolctl import threadpool_info

        kernel = next((pool.get("architecture") for pool in threadpool_info() if pool.get("user_api") == "blas"),
                      None)
    except Exception:  # pragma: no cover
        pass
    cpu_bits = 8 * cpu_simd_bytes()
    return {"blas": blas, "kernel": kernel,
            "kernel_bits": _KERNEL_BITS.get(str(kernel).lower()) if kernel else None,
            "cpu_bits": cpu_bits, "coretype_env": os.environ.get("OPENBLAS_CORETYPE")}


class Report(dict):
    """A dict of facts about this machine that prints as an aligned table. ``report["SIMD"]`` (the old
    name) reads the ``"CPU supports"`` row (the CPU's SIMD flags)."""

    _OLD_NAMES = {"SIMD": "CPU supports"}

    def __missing__(self, key):
        if key in self._OLD_NAMES and self._OLD_NAMES[key] in self:
            return self[self._OLD_NAMES[key]]
        raise KeyError(key)

    def __str__(self) -> str:
        width = max(len(k) for k in self)
        return "\n".join(f"{k:<{width}} : {v}" for k, v in self.items())

    def _repr_pretty_(self, p, cycle):  # IPython
        p.text(str(self))


def _vector_text() -> str:
    v = code_vector()
    reg = f"{v['register']}, " if v["register"] else ""
    text = f"{reg}{v['bits']}-bit = {simd_lanes(4)} float32 lanes per vector (from {v['source']})"
    if 8 * cpu_simd_bytes() > v["bits"]:
        text += f"; the CPU supports {8 * cpu_simd_bytes()}-bit"
    return text


def report() -> Report:
    """Facts about this machine: CPU, cores, numba threads, BLAS, GPU or simulator, CuPy, MPI."""
    import numba

    blas, blas_threads = _blas_info()
    usable, gpu_name = detect_gpu()
    if _CUDA_MODE == "gpu":
        cuda = f"GPU: {gpu_name}"
    elif _CUDA_MODE == "simulator":
        cuda = f"CUDA simulator (numba, on the CPU) -- {gpu_name}"
    else:
        cuda = "unavailable (numba imported before course_lib, no GPU)"
    if _module_installed("cupy"):
        cupy_state = "installed, GPU usable" if usable else "installed, no GPU"
    else:
        cupy_state = "not installed"
    mpi_ok, mpi_info = mpi_available()
    return Report(
        {
            "CPU": cpu_model(),
            "CPU supports": _simd_flags(),
            "vector code": _vector_text(),
            "cores": cpu_count(),
            "numba threads": f"{numba.get_num_threads()} (max {numba.config.NUMBA_NUM_THREADS})",
            "BLAS": blas,
            "BLAS threads": blas_threads,
            "caches": ", ".join(f"{k} {v >> 10} KiB" for k, v in cache_sizes().items())
            or platform_facts.unknown("cache sizes"),
            "CUDA": cuda,
            "CuPy": cupy_state,
            "MPI": f"mpi4py + {mpiexec_name(mpi_info)}" if mpi_ok else f"not available: {mpi_info}",
            **{k: v for k, v in versions().items() if k != "BLAS"},
        }
    )
