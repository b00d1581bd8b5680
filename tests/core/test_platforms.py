"""Machine facts on other platforms: no /proc, no schedstat, no sysfs caches, no os.sched_getaffinity, no
taskset, a Mac's sysctl answers, Windows. Each reader returns None (or {}), each report says "unknown here"
with the reason, and nothing raises."""
import ast
import builtins
import os
import platform
import shutil
import subprocess
import time
from pathlib import Path

import pytest

import course_lib
from course_lib import __main__ as cli
from course_lib.core import backend, platform_facts, sysload, timing
from course_lib.experiments import batching
from course_lib.teaching import record

REAL_OPEN, REAL_LISTDIR, REAL_RUN, REAL_WHICH = builtins.open, os.listdir, subprocess.run, shutil.which
APPLE_M2 = {"machdep.cpu.brand_string": "Apple M2 Pro", "hw.perflevel0.l1dcachesize": "131072",
            "hw.perflevel0.l2cachesize": "16777216", "hw.l1dcachesize": "65536", "hw.l2cachesize": "4194304",
            "vm.loadavg": "{ 1.52 1.71 1.80 }", "hw.ncpu": "10"}
INTEL_MAC = {"machdep.cpu.brand_string": "Intel(R) Core(TM) i9-9880H CPU @ 2.30GHz",
             "machdep.cpu.features": "FPU VME SSE3 SSE4.1 SSE4.2 AVX1.0 FMA", "machdep.cpu.leaf7_features": "AVX2 BMI2",
             "hw.l1dcachesize": "32768", "hw.l2cachesize": "262144", "hw.l3cachesize": "16777216"}


def _hidden(path) -> bool:
    return str(os.fspath(path)).startswith(("/proc", "/sys"))


@pytest.fixture(autouse=True)
def _fresh_caches():
    backend.cache_sizes.cache_clear()
    yield
    backend.cache_sizes.cache_clear()


@pytest.fixture
def no_proc(monkeypatch):
    """A system without /proc and /sys (macOS, Windows, a locked-down container)."""
    def fake_open(path, *args, **kwargs):
        if isinstance(path, (str, os.PathLike)) and _hidden(path):
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return REAL_OPEN(path, *args, **kwargs)

    def fake_listdir(path="."):
        if _hidden(path):
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return REAL_LISTDIR(path)
    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(os, "listdir", fake_listdir)


@pytest.fixture
def no_affinity(monkeypatch):
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)


def _as_mac(monkeypatch, answers: dict, machine: str):
    """platform.system() says Darwin; `sysctl -n NAME` answers from ``answers`` (exit 1 for any other name)."""
    calls = []

    def fake_run(cmd, *args, **kwargs):
        if isinstance(cmd, list) and cmd and cmd[0].endswith("sysctl"):
            calls.append(cmd[-1])
            name = cmd[-1]
            if name in answers:
                return subprocess.CompletedProcess(cmd, 0, answers[name] + "\n", "")
            return subprocess.CompletedProcess(cmd, 1, "", f"sysctl: unknown oid '{name}'\n")
        return REAL_RUN(cmd, *args, **kwargs)
    monkeypatch.setattr(platform_facts, "system", lambda: "Darwin")
    monkeypatch.setattr(platform, "machine", lambda: machine)
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: "/usr/sbin/sysctl" if name == "sysctl"
                        else REAL_WHICH(name, *a, **k))
    monkeypatch.setattr(subprocess, "run", fake_run)
    return calls


def test_linux_here_reads_the_real_facts():
    if platform.system() != "Linux" or not os.path.exists("/proc/cpuinfo"):
        pytest.skip("this check reads a Linux machine's /proc")
    assert platform_facts.system() == "Linux"
    assert platform_facts.cpu_model() == platform_facts.cpuinfo("model name")
    assert platform_facts.affinity() == sorted(os.sched_getaffinity(0))
    assert backend.cpu_count() == len(os.sched_getaffinity(0))
    assert platform_facts.load_average() == pytest.approx(os.getloadavg(), abs=1.0)


def test_without_proc_and_sys_every_reader_says_unknown(no_proc, monkeypatch):
    monkeypatch.setattr(platform_facts, "system", lambda: "Linux")
    monkeypatch.setattr(platform, "processor", lambda: "")
    assert platform_facts.cpuinfo("model name") is None
    assert platform_facts.cpu_model() is None and platform_facts.cpu_flags() is None
    assert platform_facts.cache_sizes() == {} and backend.cache_sizes() == {}
    assert backend.cpu_model() == "unknown here (the CPU's model name: /proc and /sys do not say)"
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    assert backend._simd_flags() == "unknown here (the CPU's flags: /proc and /sys do not say)"
    assert backend.cpu_simd_bytes() == 16


def test_without_proc_the_load_readers_return_nothing_and_timing_still_works(no_proc):
    assert sysload.busy_cpu_seconds() is None
    assert sysload.run_queue_wait() is None
    assert sysload.thread_cpu() == {}
    assert sysload.others_running() is None
    assert sysload.process_run_seconds(os.getpid()) is None
    assert sysload.waited(None, None) is None
    t0 = time.perf_counter()
    assert sysload.settle(window=0.01, limit=0.05) is None            # sleeps one window, says it cannot tell
    assert time.perf_counter() - t0 < 5
    res = timing.measure(lambda: sum(range(100)), repeat=3, warmup=1)
    assert len(res.times) == 3 and min(res.times) > 0


def test_a_garbled_proc_stat_is_none_not_an_exception(monkeypatch, tmp_path):
    bad = tmp_path / "stat"
    bad.write_text("cpu  12 x\n")

    def fake_open(path, *args, **kwargs):
        return REAL_OPEN(bad if str(path) == "/proc/stat" else path, *args, **kwargs)
    monkeypatch.setattr(builtins, "open", fake_open)
    assert sysload.busy_cpu_seconds() is None


def test_without_sched_getaffinity_cores_come_from_cpu_count(no_affinity, monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert platform_facts.affinity() is None
    assert platform_facts.usable_cpus() == 6 and backend.cpu_count() == 6
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert backend.cpu_count() == 1
    assert backend.cores_text() == "1 core"


def test_nothing_in_course_lib_runs_taskset():
    """Pinning to cores is the Makefile's business (test-one-core, which says when taskset is missing): no
    module of the package runs ``taskset``, so a system without util-linux loses nothing at run time."""
    package = Path(course_lib.__file__).parent
    runs = [f"{p.relative_to(package)}:{node.lineno}" for p in sorted(package.rglob("*.py"))
            for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and (node.value == "taskset" or node.value.startswith("taskset "))]
    assert not runs, f"course_lib runs taskset at {runs}: read os.sched_getaffinity through core.platform_facts"


def test_without_caches_every_working_set_is_dram(no_proc, monkeypatch):
    monkeypatch.setattr(platform_facts, "system", lambda: "Linux")
    assert backend.cache_sizes() == {}
    assert batching.cache_level(1 << 10) == "DRAM"


def test_an_apple_silicon_mac_reads_sysctl(no_proc, no_affinity, monkeypatch):
    calls = _as_mac(monkeypatch, APPLE_M2, "arm64")
    monkeypatch.setattr(os, "getloadavg", lambda: (_ for _ in ()).throw(OSError("no load average")))
    assert platform_facts.sysctl("machdep.cpu.brand_string") == "Apple M2 Pro"
    assert platform_facts.sysctl("hw.l3cachesize") is None                  # an unknown oid: None, not an error
    assert backend.cpu_model() == "Apple M2 Pro"
    assert backend.cache_sizes() == {"L1d": 131072, "L2": 16777216}       # the performance cores' caches
    assert platform_facts.cpu_flags() == set()
    assert backend._simd_flags() == "NEON (128-bit)" and backend.cpu_simd_bytes() == 16
    assert platform_facts.load_average() == (1.52, 1.71, 1.80)
    assert "machdep.cpu.brand_string" in calls and "vm.loadavg" in calls


def test_an_intel_mac_reads_its_flags_under_linux_names(no_proc, monkeypatch):
    _as_mac(monkeypatch, INTEL_MAC, "x86_64")
    flags = platform_facts.cpu_flags()
    assert {"sse4_2", "avx", "avx2", "fma"} <= flags and "avx512f" not in flags
    assert backend._simd_flags() == "sse4_2 avx avx2 fma" and backend.cpu_simd_bytes() == 32
    assert backend.cache_sizes() == {"L1d": 32768, "L2": 262144, "L3": 16777216}


def test_a_mac_whose_sysctl_hangs_or_is_missing_says_unknown(no_proc, monkeypatch):
    _as_mac(monkeypatch, {}, "arm64")

    def hangs(cmd, *args, **kwargs):
        raise subprocess.TimeoutExpired(cmd, kwargs.get("timeout"))
    monkeypatch.setattr(subprocess, "run", hangs)
    monkeypatch.setattr(platform, "processor", lambda: "")
    assert platform_facts.sysctl("hw.ncpu") is None
    assert backend.cpu_model() == "unknown here (the CPU's model name: sysctl does not say)"
    assert backend.cache_sizes() == {}
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    monkeypatch.setattr(os.path, "exists", lambda p: False)
    assert platform_facts.sysctl("hw.ncpu") is None


def test_windows_reads_platform_processor(no_proc, no_affinity, monkeypatch):
    monkeypatch.setattr(platform_facts, "system", lambda: "Windows")
    monkeypatch.setattr(platform, "processor", lambda: "Intel64 Family 6 Model 85 Stepping 7, GenuineIntel")
    monkeypatch.delattr(os, "getloadavg", raising=False)
    assert backend.cpu_model() == "Intel64 Family 6 Model 85 Stepping 7, GenuineIntel"
    assert platform_facts.cpu_flags() is None and platform_facts.cache_sizes() == {}
    assert platform_facts.load_average() is None
    assert backend._simd_flags() == "unknown here (the CPU's flags: Windows has no reader for it in course_lib)"


def test_sysctl_is_asked_only_on_a_mac_and_refuses_a_bad_name(monkeypatch):
    monkeypatch.setattr(platform_facts, "system", lambda: "Linux")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("sysctl must not run off macOS"))
    assert platform_facts.sysctl("hw.ncpu") is None
    with pytest.raises(ValueError, match="name: expected a sysctl name"):
        platform_facts.sysctl("")
    with pytest.raises(ValueError, match="what: expected the fact's name"):
        platform_facts.unknown(" ")


@pytest.mark.parametrize("where", ["no_proc", "mac", "windows"])
def test_machine_table_report_and_record_degrade(where, no_proc, no_affinity, monkeypatch, capsys):
    backend.report()                                           # numba's code-width probe compiled before patching
    monkeypatch.setattr(platform, "processor", lambda: "")
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    if where == "mac":
        _as_mac(monkeypatch, {}, "x86_64")   # a Mac whose sysctl answers nothing
        why = "sysctl does not say"
    elif where == "windows":
        monkeypatch.setattr(platform_facts, "system", lambda: "Windows")
        monkeypatch.delattr(os, "getloadavg", raising=False)
        why = "Windows has no reader for it in course_lib"
    else:
        monkeypatch.setattr(platform_facts, "system", lambda: "Linux")
        why = "/proc and /sys do not say"
    rep = backend.report()                                     # the 00 setup table prints this
    assert rep["CPU"] == f"unknown here (the CPU's model name: {why})"
    assert rep["caches"] == f"unknown here (cache sizes: {why})"
    assert rep["CPU supports"] == f"unknown here (the CPU's flags: {why})"
    assert rep["cores"] == (os.cpu_count() or 1)
    assert "unknown here" in str(rep)
    assert cli.main(["report"]) == 0
    assert f"unknown here (cache sizes: {why})" in capsys.readouterr().out
    facts = record.machine_facts()
    assert facts["affinity"] is None and facts["caches"] == {}
    assert facts["cpu"].startswith("unknown here")
    if where == "windows":
        assert facts["loadavg_at_start"] is None


@pytest.mark.parametrize("libc", ["no mallopt", "no libc"])
def test_off_glibc_steady_memory_changes_nothing(libc, monkeypatch):
    import ctypes

    from course_lib.core import memory

    class NoMallopt:           # macOS's libSystem: a C library without glibc's mallopt
        pass

    def fake_cdll(name, *a, **k):
        if libc == "no libc":  # Windows: no C library by that name
            raise OSError(f"{name}: cannot open shared object file")
        return NoMallopt()
    monkeypatch.setattr(memory, "_steady", None)
    monkeypatch.setattr(ctypes, "CDLL", fake_cdll)
    assert memory.steady_memory() is False
