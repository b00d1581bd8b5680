"""One matrix product, several libraries: GEMM providers (algorithms layer; chapter 09).

``gemm(A, B, out=None, provider="numpy", alpha=1.0, beta=0.0)`` computes ``out = alpha * A @ B + beta * out``
for ``A (M, K)`` and ``B (K, N)`` of one float dtype (float32 or float64), ``out (M, N)``. Which *library*
computes it is the ``provider``:

==========  ===========================================================================================
``numpy``   numpy's own BLAS (OpenBLAS in the pip wheels): ``np.matmul(A, B, out=out)``. Always there.
``mkl``     Intel oneMKL, ``cblas_sgemm`` / ``cblas_dgemm`` from ``libmkl_rt`` (the ``mkl`` wheel).
``blis``    BLIS (the ``blis`` wheel by explosion), its typed API ``bli_sgemm`` / ``bli_dgemm``.
==========  ===========================================================================================

``mkl`` and ``blis`` are the optional extra: ``pip install -e '.[fast]'``. Nothing in the course needs them;
:func:`providers` lists what this machine has and :func:`absent` says why the others are missing.

No copies: every provider reads ``A`` and ``B`` where they lie and writes into ``out``. An operand may be
C-contiguous, or the transpose of a C-contiguous array (``W.T``: BLAS's "transposed" flag, no copy); any
other strides are a ``ValueError`` (``np.ascontiguousarray`` first). ``out`` must be C-contiguous, of the
result's shape and dtype, and must not overlap ``A`` or ``B``. The libraries are called through ``ctypes``
on the arrays' pointers (``ctypes`` releases the GIL during the call).

Threads: ``mkl`` and ``blis`` use numba's thread count (what :func:`course_lib.core.backend.set_threads`
sets for numba and numpy's BLAS together), so a thread sweep moves every provider alike.

``gemm_batch(A, B, out, provider=..., threads=None)`` computes a stack of products at once, ``out[i] = A[i] @ B[i]``
for ``A (g, M, K)``, ``B (g, K, N)`` -- the many small products of the chunked scan (chapter 08): ``numpy`` is
``np.matmul`` on the stacks, ``mkl`` one ``cblas_sgemm_batch_strided`` call, ``blis`` a ``bli_sgemm`` per matrix.
The stacks may be views with any row and column strides a BLAS takes (a slice of the columns, a transposed view).

``compiled_gemm(dtype)`` is numpy's own BLAS ``cblas_?gemm`` as a ctypes function that numba code calls with no GIL
and no Python in between (chapter 08's chunked form runs a whole run of chunks in one compiled call), or None
where that BLAS is not an OpenBLAS exporting it.

``matmul_for(provider)`` returns a function with ``np.matmul``'s call shape, ``f(A, B, out=None)``, for
code written with ``np.matmul`` (the LSTM's products). ``provider_info(name)`` tells which library file,
version and kernel family a provider runs.
"""
from __future__ import annotations

import ctypes
import functools
import importlib.metadata as metadata
import importlib.util
from pathlib import Path

import numpy as np

from ..core import backend
from ..core.validate import check_float

__all__ = ["PROVIDERS", "EXTRA", "gemm", "gemm_batch", "batch_product", "compiled_gemm", "providers", "absent", "provider_info", "matmul_for", "check_provider"]

PROVIDERS = ("numpy", "mkl", "blis")   # every provider the course knows, in the order tables show them
EXTRA = "pip install -e '.[fast]'"      # what adds mkl and blis


# --------------------------------------------------------------------------- operands
def _check_float_array(X, name: str, ndim: int, what: str, dtype=None) -> None:
    """``X`` is a float32/float64 numpy array of ``ndim`` dimensions (``dtype``: that one); else an error naming
    ``name``."""
    if not isinstance(X, np.ndarray):
        raise TypeError(f"{name}: expected a numpy array, got {type(X).__name__}")
    if X.ndim != ndim:
        raise ValueError(f"{name}: expected {what}, got {X.ndim}-D with shape {X.shape}")
    if X.dtype not in (np.float32, np.float64):
        raise TypeError(f"{name}: expected float32 or float64, got {X.dtype}")
    if dtype is not None and X.dtype != dtype:
        raise TypeError(f"{name}: expected {dtype} like A, got {X.dtype} (one dtype for A, B and out)")


def _operand(X, name: str, dtype=None) -> tuple[np.ndarray, bool, int]:
    """``(X, transposed, leading dimension)`` for BLAS: a C-contiguous ``X`` is read as it is, the transpose
    of a C-contiguous array (F-contiguous) with the transposed flag. Anything else is a ValueError."""
    _check_float_array(X, name, 2, "a 2-D array (a matrix)", dtype)
    if X.flags.c_contiguous:
        return X, False, max(1, X.shape[1])
    if X.flags.f_contiguous:
        return X, True, max(1, X.shape[0])
    raise ValueError(f"{name}: expected a C-contiguous array or the transpose of one (strides {X.strides}, "
                     f"shape {X.shape}); pass np.ascontiguousarray({name})")


def _result(A, B, out) -> np.ndarray:
    """``out`` checked (or made): C-contiguous, shape (M, N), A's dtype, not overlapping A or B."""
    M, N = A.shape[0], B.shape[1]
    if out is None:
        return np.zeros((M, N), A.dtype)
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out: expected a numpy array, got {type(out).__name__}")
    if out.shape != (M, N):
        raise ValueError(f"out: expected shape (M, N) = ({M}, {N}) for A {A.shape} @ B {B.shape}, got {out.shape}")
    if out.dtype != A.dtype:
        raise TypeError(f"out: expected {A.dtype} like A, got {out.dtype}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out: expected a writeable C-contiguous array (the product is written into it)")
    for name, X in (("A", A), ("B", B)):
        if np.may_share_memory(out, X) and np.shares_memory(out, X, max_work=10**6):
            raise ValueError(f"out: overlaps {name}; the product cannot be written over its own input "
                             f"(pass a separate out=)")
    return out


# --------------------------------------------------------------------------- numpy
def _numpy_gemm(A, B, out, alpha, beta, layout):
    if alpha == 1.0 and beta == 0.0:
        return np.matmul(A, B, out=out)
    prod = np.matmul(A, B)
    out *= beta
    out += alpha * prod if alpha != 1.0 else prod
    return out


# --------------------------------------------------------------------------- mkl
def _dist_file(dist: str, patterns) -> Path | None:
    """The first file of an installed distribution whose name matches one of ``patterns`` (no network)."""
    try:
        files = metadata.files(dist) or []
    except metadata.PackageNotFoundError:
        return None
    for pattern in patterns:
        for f in files:
            if Path(str(f)).match(pattern):
                path = Path(metadata.distribution(dist).locate_file(f)).resolve()
                if path.exists():
                    return path
    return None


_c_int, _c_ptr = ctypes.c_int, ctypes.c_void_p


@functools.lru_cache(maxsize=None)
def _mkl():
    """``(library, path)`` of libmkl_rt from the ``mkl`` wheel, or ``(None, why)``."""
    path = _dist_file("mkl", ("libmkl_rt.so*", "mkl_rt*.dll", "libmkl_rt*.dylib"))
    if path is None:
        return None, f"mkl: not installed ({EXTRA})"
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as exc:
        return None, f"mkl: {path.name} did not load ({exc})"
    for fn, real in (("cblas_sgemm", ctypes.c_float), ("cblas_dgemm", ctypes.c_double)):
        getattr(lib, fn).restype = None
        getattr(lib, fn).argtypes = [_c_int] * 6 + [real, _c_ptr, _c_int, _c_ptr, _c_int, real, _c_ptr, _c_int]
    for fn, real in (("cblas_sgemm_batch_strided", ctypes.c_float), ("cblas_dgemm_batch_strided", ctypes.c_double)):
        # layout, trans a, trans b, m, n, k, alpha, a, lda, stride a, b, ldb, stride b, beta, c, ldc, stride c, count
        getattr(lib, fn).restype = None
        getattr(lib, fn).argtypes = ([_c_int] * 6 + [real, _c_ptr, _c_int, _c_int, _c_ptr, _c_int, _c_int, real,
                                                     _c_ptr, _c_int, _c_int, _c_int])
    lib.MKL_Set_Num_Threads_Local.argtypes, lib.MKL_Set_Num_Threads_Local.restype = [_c_int], _c_int
    backend.blas_loaded()
    return lib, str(path)


_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112   # CBLAS_LAYOUT / CBLAS_TRANSPOSE


def _mkl_gemm(A, B, out, alpha, beta, layout):
    lib = _mkl()[0]
    ta, lda, tb, ldb = layout
    M, K = A.shape
    N = B.shape[1]
    if max(M, N, K, lda, ldb) >= 2**31:
        raise ValueError(f"A, B: mkl's 32-bit interface takes sizes below 2**31, got A {A.shape}, B {B.shape}")
    fn = lib.cblas_sgemm if A.dtype == np.float32 else lib.cblas_dgemm
    lib.MKL_Set_Num_Threads_Local(_threads())
    fn(_ROW_MAJOR, _TRANS if ta else _NO_TRANS, _TRANS if tb else _NO_TRANS, M, N, K, alpha,
       A.ctypes.data, lda, B.ctypes.data, ldb, beta, out.ctypes.data, max(1, N))
    return out


# --------------------------------------------------------------------------- blis
_dim = ctypes.c_int64


@functools.lru_cache(maxsize=None)
def _blis():
    """``(library, path)`` of the BLIS inside the ``blis`` wheel (its extension module exports BLIS's
    typed API), or ``(None, why)``."""
    spec = importlib.util.find_spec("blis.cy") if importlib.util.find_spec("blis") else None
    if spec is None or not spec.origin:
        return None, f"blis: not installed ({EXTRA})"
    try:
        lib = ctypes.CDLL(spec.origin)
    except OSError as exc:
        return None, f"blis: {Path(spec.origin).name} did not load ({exc})"
    for fn, real in (("bli_sgemm", ctypes.c_float), ("bli_dgemm", ctypes.c_double)):
        getattr(lib, fn).restype = None
        # trans a, trans b, m, n, k, *alpha, a, rs_a, cs_a, b, rs_b, cs_b, *beta, c, rs_c, cs_c
        getattr(lib, fn).argtypes = [_c_int, _c_int, _dim, _dim, _dim, ctypes.POINTER(real), _c_ptr, _dim, _dim,
                                     _c_ptr, _dim, _dim, ctypes.POINTER(real), _c_ptr, _dim, _dim]
    lib.bli_arch_query_id.restype, lib.bli_arch_string.restype = _c_int, ctypes.c_char_p
    lib.bli_arch_string.argtypes = [_c_int]
    backend.blas_loaded()
    return lib, spec.origin


def _strides(trans: bool, ld: int) -> tuple[int, int]:
    """BLIS's (row stride, column stride) of an operand BLAS would pass as (trans, ld)."""
    return (1, ld) if trans else (ld, 1)


def _blis_gemm(A, B, out, alpha, beta, layout, ldc=None):
    lib = _blis()[0]
    ta, lda, tb, ldb = layout
    M, K = A.shape
    N = B.shape[1]
    fn, real = (lib.bli_sgemm, ctypes.c_float) if A.dtype == np.float32 else (lib.bli_dgemm, ctypes.c_double)
    (ra, ca), (rb, cb) = _strides(ta, lda), _strides(tb, ldb)
    fn(0, 0, M, N, K, ctypes.byref(real(alpha)), A.ctypes.data, ra, ca, B.ctypes.data, rb, cb,
       ctypes.byref(real(beta)), out.ctypes.data, max(1, N) if ldc is None else ldc, 1)
    return out


# --------------------------------------------------------------------------- the table
_LOADERS = {"mkl": _mkl, "blis": _blis}
_CALLS = {"numpy": _numpy_gemm, "mkl": _mkl_gemm, "blis": _blis_gemm}


def _threads() -> int:
    import numba

    return int(numba.get_num_threads())


def providers() -> tuple[str, ...]:
    """The providers this machine has, ``"numpy"`` first (always there)."""
    return tuple(p for p in PROVIDERS if p == "numpy" or _LOADERS[p]()[0] is not None)


def absent() -> dict:
    """``{provider: why}`` for each provider this machine lacks (empty when all are here)."""
    return {p: _LOADERS[p]()[1] for p in PROVIDERS if p != "numpy" and _LOADERS[p]()[0] is None}


def check_provider(provider, name: str = "provider") -> str:
    """``provider`` if it is available here; else a ValueError that lists the available ones (and why
    a known provider is missing)."""
    if provider not in PROVIDERS:
        raise ValueError(f"{name}: expected one of the available providers {list(providers())}, got {provider!r}")
    if provider not in providers():
        raise ValueError(f"{name}: {absent()[provider]}; available here: {list(providers())}")
    return provider


def gemm(A, B, out=None, *, provider: str = "numpy", alpha: float = 1.0, beta: float = 0.0) -> np.ndarray:
    """``out (M, N) = alpha * A (M, K) @ B (K, N) + beta * out`` computed by ``provider``; returns ``out``
    (the same object when given, a new array otherwise -- then ``beta`` multiplies zeros).

    ``A``, ``B``: float32 or float64 (one dtype), each C-contiguous or the transpose of a C-contiguous array.
    ``out``: C-contiguous, shape (M, N), the same dtype, not overlapping ``A`` or ``B``."""
    if provider != "numpy":
        check_provider(provider)
    A, ta, lda = _operand(A, "A")
    B, tb, ldb = _operand(B, "B", A.dtype)
    if A.shape[1] != B.shape[0]:
        raise ValueError(f"B: expected {A.shape[1]} rows (A is {A.shape}, so A @ B needs B (K, N) with "
                         f"K = {A.shape[1]}), got {B.shape}")
    if not (type(alpha) is float and type(beta) is float and alpha == 1.0 and beta == 0.0):   # the default: fast
        alpha, beta = check_float(alpha, "alpha"), check_float(beta, "beta")
    out = _result(A, B, out)
    if out.size == 0:
        return out
    if A.shape[1] == 0:          # an empty sum: alpha * 0 + beta * out
        out *= beta
        return out
    return _CALLS[provider](A, B, out, alpha, beta, (ta, lda, tb, ldb))


# --------------------------------------------------------------------------- stacks of products
def _stack(X, name: str, dtype=None) -> tuple[bool, int, int]:
    """``(transposed, leading dimension, batch stride)`` in elements for a 3-D stack ``X (g, r, c)`` whose matrices a
    BLAS can read in place: unit column stride (row-major, ``ld`` = row stride) or unit row stride (a transposed
    view). Anything else is a ValueError naming ``name``."""
    _check_float_array(X, name, 3, "a 3-D stack of matrices (g, rows, columns)", dtype)
    size = X.itemsize
    if X.size == 0:                         # nothing is read or written (numpy may give such an array 0 strides)
        return False, max(X.shape[2], 1), 0
    if any(st % size or st < 0 for st in X.strides):
        raise ValueError(f"{name}: expected non-negative strides in whole elements, got {X.strides}")
    g, r, c = (st // size for st in X.strides)
    rows, cols = X.shape[1:]
    if (c == 1 or cols == 1) and (rows == 1 or r >= cols):
        return False, max(cols, 1) if rows == 1 else r, g
    if (r == 1 or rows == 1) and (cols == 1 or c >= rows):
        return True, max(rows, 1) if cols == 1 else c, g
    raise ValueError(f"{name}: each matrix needs unit row or column stride (a slice of rows or columns, or a "
                     f"transposed view), got strides {X.strides} for itemsize {size}")


def gemm_batch(A, B, out, *, provider: str = "numpy", threads: int | None = None) -> np.ndarray:
    """``out[i] = A[i] @ B[i]`` for every ``i``: ``A (g, M, K)``, ``B (g, K, N)``, ``out (g, M, N)``, one float dtype;
    returns ``out``. Each matrix of a stack needs unit row or column stride (row slices, column slices and
    ``np.swapaxes(X, 1, 2)`` all qualify); ``out``'s matrices unit column stride, not overlapping ``A`` or ``B``.
    ``threads``: the library's threads for this call (default: numba's thread count; ``numpy``'s BLAS keeps the
    pool ``course_lib.core.backend.blas_threads`` set -- callers inside worker threads pass 1 and set that too)."""
    if provider != "numpy":
        check_provider(provider)
    ta, lda, sa = _stack(A, "A")
    tb, ldb, sb = _stack(B, "B", A.dtype)
    trans_out, ldc, sc = _stack(out, "out", A.dtype)
    g, M, K = A.shape
    if B.shape[0] != g or B.shape[1] != K or out.shape != (g, M, B.shape[2]):
        raise ValueError(f"B, out: expected B ({g}, {K}, N) and out ({g}, {M}, N) for A {A.shape}, got B {B.shape} "
                         f"and out {out.shape}")
    if trans_out and out.shape[2] > 1:
        raise ValueError(f"out: each matrix needs unit column stride (row-major), got strides {out.strides}")
    if g > 1 and M * B.shape[2] and sc < (M - 1) * ldc + B.shape[2]:
        raise ValueError(f"out: its matrices overlap one another (strides {out.strides}); expected separate matrices")
    if np.shares_memory(out, A) or np.shares_memory(out, B):
        raise ValueError("out: must not overlap A or B (a BLAS reads its operands while it writes)")
    if out.size == 0:
        return out
    if K == 0:
        out[...] = 0
        return out
    if provider != "numpy" and max(M, B.shape[2], K, lda, ldb, ldc, sa, sb, sc, g) >= 2**31:
        raise ValueError(f"A, B: the libraries' 32-bit interfaces take sizes below 2**31, got A {A.shape}, B {B.shape}")
    return batch_product(provider, threads)(A, B, out)


def batch_product(provider: str = "numpy", threads: int | None = None):
    """The function ``f(A, B, out)`` behind :func:`gemm_batch`, WITHOUT its checks (about 10 us a call in Python):
    for a caller that checked its stacks once and then multiplies many groups of the same layout (the chunked scan).
    ``numpy``: ``np.matmul`` itself."""
    provider = check_provider(provider)
    if provider == "numpy":
        return lambda A, B, out: np.matmul(A, B, out=out)
    n_threads = _threads() if threads is None else threads
    if provider == "mkl":
        lib = _mkl()[0]

        def mkl(A, B, out):
            (ta, lda, sa), (tb, ldb, sb), (_, ldc, sc) = _stack(A, "A"), _stack(B, "B"), _stack(out, "out")
            fn = lib.cblas_sgemm_batch_strided if A.dtype == np.float32 else lib.cblas_dgemm_batch_strided
            lib.MKL_Set_Num_Threads_Local(n_threads)
            fn(_ROW_MAJOR, _TRANS if ta else _NO_TRANS, _TRANS if tb else _NO_TRANS, A.shape[1], B.shape[2],
               A.shape[2], 1.0, A.ctypes.data, lda, sa, B.ctypes.data, ldb, sb, 0.0, out.ctypes.data, ldc, sc,
               A.shape[0])
            return out
        return mkl

    def blis(A, B, out):          # no batched call in BLIS's typed API: one product per matrix
        (ta, lda, _), (tb, ldb, _), (_, ldc, _) = _stack(A, "A"), _stack(B, "B"), _stack(out, "out")
        for i in range(A.shape[0]):
            _blis_gemm(A[i], B[i], out[i], 1.0, 0.0, (ta, lda, tb, ldb), ldc)
        return out
    return blis


# --------------------------------------------------------------------------- numpy's BLAS, callable from numba
_CBLAS_NAMES = ("scipy_cblas_{}gemm64_", "cblas_{}gemm64_", "cblas_{}gemm")   # numpy>=2 wheels, ILP64 builds, others


@functools.lru_cache(maxsize=None)
def compiled_gemm(dtype):
    """numpy's BLAS ``cblas_sgemm`` (float32) or ``cblas_dgemm`` (float64) as a ctypes function with 64-bit sizes --
    ``f(101 (row-major), trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)``, ``111``/``112`` for no
    transpose/transpose, pointers as integers -- which numba-compiled code can call (no GIL, no Python between
    products); or None where numpy's BLAS is not OpenBLAS (threadpoolctl says which library it is) or exports none of
    the names tried. A 64-bit size is what ILP64 builds take and, passed in a 64-bit register or stack slot, what a
    32-bit build reads too; a 2 x 3 x 2 product is checked before the function is handed out."""
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"dtype: expected float32 or float64, got {dtype}")
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency
        return None
    blas = [i for i in threadpool_info() if i.get("user_api") == "blas" and i.get("internal_api") == "openblas"]
    blas.sort(key=lambda i: "numpy" not in str(i.get("filepath", "")))      # numpy's own (its wheel's) first
    if not blas:
        return None
    try:
        lib = ctypes.CDLL(blas[0]["filepath"])
    except OSError:
        return None
    real = ctypes.c_float if dtype == np.float32 else ctypes.c_double
    i64 = ctypes.c_int64
    for name in _CBLAS_NAMES:
        fn = getattr(lib, name.format("s" if dtype == np.float32 else "d"), None)
        if fn is None:
            continue
        fn.restype = None
        fn.argtypes = [_c_int] * 3 + [i64] * 3 + [real, _c_ptr, i64, _c_ptr, i64, real, _c_ptr, i64]
        A, B = np.arange(1, 7, dtype=dtype).reshape(2, 3), np.arange(1, 7, dtype=dtype).reshape(3, 2)
        C = np.zeros((2, 2), dtype)
        fn(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, 2, 2, 3, 1.0, A.ctypes.data, 3, B.ctypes.data, 2, 0.0, C.ctypes.data, 2)
        if np.array_equal(C, A @ B):
            return fn
    return None


def matmul_for(provider: str = "numpy"):
    """A function ``f(A, B, out=None)`` like ``np.matmul`` for 2-D operands, computed by ``provider``
    (``np.matmul`` itself for ``"numpy"``: the default path stays exactly numpy's)."""
    provider = check_provider(provider)
    if provider == "numpy":
        return np.matmul
    return functools.partial(_matmul_2d, provider=provider)


def _matmul_2d(A, B, out=None, *, provider):
    return gemm(A, B, out, provider=provider)


def provider_info(name: str) -> dict:
    """``{"provider", "library", "version", "kernel", "threads"}`` for an available provider: the library
    file it runs, its version, and the kernel family it picked for this CPU where the library says so."""
    check_provider(name, "name")
    if name == "numpy":
        from threadpoolctl import threadpool_info

        pool = next((p for p in threadpool_info() if p.get("user_api") == "blas"
                     and "mkl" not in str(p.get("filepath", ""))), {})
        return {"provider": name, "library": pool.get("filepath", "?"), "version": pool.get("version", "?"),
                "kernel": pool.get("architecture", "?"), "threads": pool.get("num_threads", "?")}
    lib, path = _LOADERS[name]()
    if name == "mkl":
        buf = ctypes.create_string_buffer(256)
        lib.MKL_Get_Version_String(buf, 256)
        return {"provider": name, "library": path, "version": buf.value.decode(errors="replace").split("-Product")[0],
                "kernel": "picked per call (MKL_VERBOSE=1 prints it)", "threads": _threads()}
    arch = lib.bli_arch_string(lib.bli_arch_query_id()).decode()
    threaded = bool(lib.bli_info_get_enable_threading())
    return {"provider": name, "library": path, "version": metadata.version("blis"), "kernel": arch,
            "threads": _threads() if threaded else 1}

