import os
import subprocess
import sys

import numpy as np
import pytest

from course_lib.core import backend


def _run(code: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_gpu_detection_does_not_import_numba_and_sets_simulator():
    r = _run("import sys, os; import course_lib.core.backend as b; "
             "print('numba' in sys.modules, b.cuda_mode(), os.environ.get('NUMBA_ENABLE_CUDASIM'))")
    assert r.returncode == 0, r.stderr
    imported, mode, flag = r.stdout.split()
    assert imported == "False"
    if mode == "simulator":
        assert flag == "1"
    else:
        assert mode == "gpu" and flag == "None"


def test_simulator_runs_a_cuda_kernel_after_import():
    if backend.gpu_available():
        pytest.skip("a real GPU is present: the simulator path is not used here")
    code = (
        "import course_lib, numpy as np\n"
        "from numba import cuda\n"
        "@cuda.jit\n"
        "def k(a):\n"
        "    i = cuda.grid(1)\n"
        "    if i < a.size: a[i] += i\n"
        "a = np.zeros(40); k[2, 32](a); print(int(a.sum()))\n"
    )
    r = _run(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(sum(range(40)))


def test_importing_numba_first_is_reported():
    r = _run("import warnings, numba; warnings.simplefilter('always')\nimport course_lib.core.backend as b; print(b.cuda_mode())",
             {"COURSE_FORCE_SIMULATOR": "1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "unavailable"
    assert "numba was imported before course_lib" in r.stderr


def test_explicit_env_flag_is_respected():
    r = _run("import course_lib.core.backend as b; print(b.cuda_mode())", {"NUMBA_ENABLE_CUDASIM": "1"})
    assert r.stdout.strip() == "simulator"


def test_report_has_the_promised_facts():
    rep = backend.report()
    for key in ("CPU", "cores", "numba threads", "BLAS", "BLAS threads", "CUDA", "CuPy", "MPI"):
        assert key in rep
    assert rep["cores"] >= 1
    text = str(rep)
    assert "CUDA" in text and text.count("\n") == len(rep) - 1
    if not backend.gpu_available():
        assert "simulator" in rep["CUDA"] or "unavailable" in rep["CUDA"]


def test_set_threads_sets_numba_and_blas_together():
    import numba
    from threadpoolctl import threadpool_info

    before = backend.get_threads()
    try:
        assert backend.set_threads(1) == 1
        assert numba.get_num_threads() == 1
        blas = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
        assert blas and all(n == 1 for n in blas)
    finally:
        backend.set_threads(before)


def test_set_threads_bad_input():
    import numba

    with pytest.raises(ValueError, match="n: expected an integer >= 1, got 0"):
        backend.set_threads(0)
    with pytest.raises(ValueError, match=f"n: expected an integer <= {numba.config.NUMBA_NUM_THREADS}"):
        backend.set_threads(numba.config.NUMBA_NUM_THREADS + 1)
    with pytest.raises(TypeError, match="n: expected an integer, got str"):
        backend.set_threads("2")


def test_xp_and_mpi():
    mod = backend.xp()
    assert mod is np or backend.gpu_available()
    ok, info = backend.mpi_available()
    assert isinstance(ok, bool) and isinstance(info, str) and info
    if ok:
        assert os.path.exists(backend.mpiexec_path())
    assert backend.cpu_count() >= 1


def test_blas_vector_bits_reports_the_kernel_family_and_the_cpu_width():
    from course_lib.core import backend as bk

    info = bk.blas_vector_bits()
    assert set(info) == {"blas", "kernel", "kernel_bits", "cpu_bits", "coretype_env"}
    assert info["cpu_bits"] in (128, 256, 512)
    flags = bk._simd_flags().split()
    assert (info["cpu_bits"] == 512) == ("avx512f" in flags)
    if info["kernel"] is not None and str(info["kernel"]).lower() in bk._KERNEL_BITS:
        assert info["kernel_bits"] == bk._KERNEL_BITS[str(info["kernel"]).lower()]
    assert info["coretype_env"] == os.environ.get("OPENBLAS_CORETYPE")  # reported as found, never set


def test_on_threads_runs_with_n_threads_and_restores_the_count():
    import numba

    before = numba.get_num_threads()
    seen = backend.on_threads(1, numba.get_num_threads)()
    assert seen == 1 and numba.get_num_threads() == before
    with pytest.raises(ValueError, match="n"):
        backend.on_threads(0, lambda: None)


def test_cores_text_counts_in_words_a_one_core_reader_reads():
    assert backend.cores_text(1) == "1 core" and backend.cores_text(2) == "2 cores"
    assert backend.cores_text() == backend.cores_text(backend.cpu_count())
    with pytest.raises(ValueError, match="n: expected a core count"):
        backend.cores_text(0)


# --------------------------------------------------------------------------- lanes of the code that ran
_ASM_ZMM = "\tvmovups\t(%rdi,%rax,4), %zmm0\n\tvfmadd213ps\t(%rdx,%rax,4), %zmm1, %zmm0\n\tvaddss\t%xmm0, %xmm1, %xmm1\n"
_ASM_YMM = "\tvmulps\t%ymm2, %ymm1, %ymm1\n\tvaddps\t%ymm1, %ymm0, %ymm0\n\tvaddps\t%xmm1, %xmm0, %xmm0\n"


def test_widest_register_reads_packed_float_arithmetic_only():
    assert backend._widest_register(_ASM_ZMM) == ("zmm", 512)
    assert backend._widest_register(_ASM_YMM) == ("ymm", 256)
    # a zmm *move* with only scalar arithmetic is not vector code
    assert backend._widest_register("\tvmovups\t%zmm0, (%rdi)\n\tvaddss\t%xmm0, %xmm1, %xmm1\n") is None
    assert backend._widest_register("\tfmla\tv0.4s, v1.4s, v2.4s\n") == ("v (NEON)", 128)


def test_feature_string_with_prefer_256_bit_gives_8_float32_lanes():
    f = backend.vector_bits_from_features
    assert f("+sse2,+avx,+avx2,+fma,+avx512f") == 512
    assert f("+sse2,+avx,+avx2,+fma,+avx512f,+prefer-256-bit") // 32 == 8
    assert f("+sse2,+avx,+avx2,-avx512f") == 256 and f("+sse2,+sse4.2") == 128
    with pytest.raises(TypeError, match="features"):
        f(None)


def test_lanes_are_those_of_the_compiled_scan_kernel_not_the_cpu_flags():
    from course_lib.experiments import scan as scan_exp

    bits = {"zmm": 512, "ymm": 256, "xmm": 128}
    widest = scan_exp.lane_instructions()["lane kernel"]["widest"]   # the scan's own compiled kernel
    v = backend.code_vector()
    if widest is None or v["register"] not in bits:
        pytest.skip("no x86 vector registers in the machine code here")
    assert v["bits"] == bits[widest] and backend.simd_bytes() == bits[widest] // 8
    assert backend.simd_lanes(4) == bits[widest] // 32 and backend.simd_lanes(8) == bits[widest] // 64
    assert backend.simd_bytes() <= backend.cpu_simd_bytes()
    rep = backend.report()
    assert f"{backend.simd_lanes(4)} float32 lanes" in rep["vector code"] and rep["SIMD"] == rep["CPU supports"]


def test_a_compiler_told_to_prefer_256_bit_is_reported_as_8_lanes():
    import llvmlite.binding as llvm

    features = llvm.get_host_cpu_features().flatten()
    if "+avx512f" not in features:
        pytest.skip("this CPU has no AVX-512: nothing to narrow")
    code = "import course_lib; from course_lib.core import backend as b; print(b.simd_lanes(4), b.cpu_simd_bytes())"
    r = _run(code, {"NUMBA_CPU_FEATURES": features + ",+prefer-256-bit"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["8", "64"]   # the code is 8 lanes wide although the CPU supports 16
    r = _run(code, {"NUMBA_CPU_FEATURES": features})
    assert r.stdout.split() == ["16", "64"]
