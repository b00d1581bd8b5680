"""Machine facts read through each operating system's own means (core layer): the one place that knows where
Linux, macOS and Windows keep them. Where a fact cannot be read, the reader returns None (or an empty dict) and
:func:`unknown` says so in words -- nothing here raises because an OS lacks a file or a command.

``system()``            "Linux", "Darwin" (macOS), "Windows", ... (``platform.system()``)
``sysctl(name)``        one macOS ``sysctl -n NAME`` answer as text, None elsewhere or when it fails (timeout 5 s)
``cpuinfo(key)``        the first ``KEY : value`` of Linux's /proc/cpuinfo, None elsewhere
``cpu_model()``         the CPU's model name: /proc/cpuinfo, ``machdep.cpu.brand_string``, ``platform.processor()``
``cpu_flags()``         the CPU's feature flags, lower case (``{"avx2", "fma", ...}``); None where the OS does not say
``cache_sizes()``       ``{"L1d": bytes, "L2": ..., "L3": ...}`` of CPU 0 (sysfs; macOS ``hw.*cachesize``, the
                        performance cores' ``hw.perflevel0.*`` first); {} where the OS does not say
``affinity()``          the sorted CPU numbers this process may run on (``os.sched_getaffinity``), None where unknown
``usable_cpus()``       how many cores this process may use: the affinity's size, else ``os.cpu_count()``
``load_average()``      ``(1, 5, 15 minute)`` run-queue averages (``os.getloadavg``, macOS ``vm.loadavg``), or None
``unknown(what)``       "unknown here (<why, for this OS>)", the words the reports print for a missing fact
"""
from __future__ import annotations

import os
import platform
import shutil
import subprocess

__all__ = ["SYSCTL_TIMEOUT", "system", "sysctl", "cpuinfo", "cpu_model", "cpu_flags", "cache_sizes", "affinity",
           "usable_cpus", "load_average", "unknown"]

SYSCTL_TIMEOUT = 5.0                         # seconds one sysctl call may take
SYSFS_CACHE = "/sys/devices/system/cpu/cpu0/cache"
_MAC_FLAG_NAMES = {"avx1.0": "avx", "sse4.2": "sse4_2", "sse4.1": "sse4_1", "avx512f": "avx512f"}


def system() -> str:
    """The OS's name as Python reports it: "Linux", "Darwin", "Windows", or "" when it cannot tell."""
    return platform.system()


def sysctl(name: str) -> str | None:
    """``sysctl -n name`` on macOS (e.g. ``"machdep.cpu.brand_string"``); None on other systems, without a
    ``sysctl`` command, on an unknown name or after :data:`SYSCTL_TIMEOUT` seconds."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"name: expected a sysctl name such as 'hw.ncpu', got {name!r}")
    if system() != "Darwin":
        return None
    exe = shutil.which("sysctl") or ("/usr/sbin/sysctl" if os.path.exists("/usr/sbin/sysctl") else None)
    if exe is None:
        return None
    try:
        res = subprocess.run([exe, "-n", name], capture_output=True, text=True, timeout=SYSCTL_TIMEOUT)
    except (OSError, subprocess.SubprocessError):
        return None
    out = (res.stdout or "").strip()
    return out if res.returncode == 0 and out else None


def _sysctl_int(name: str) -> int | None:
    try:
        value = int(sysctl(name) or "")
    except ValueError:
        return None
    return value if value > 0 else None


def cpuinfo(key: str) -> str | None:
    """The value of the first line ``key : value`` of Linux's ``/proc/cpuinfo`` (e.g. ``"model name"``,
    ``"flags"``); None where there is no such file or line."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                name, sep, value = line.partition(":")
                if sep and name.strip() == key:
                    return value.strip()
    except OSError:
        pass
    return None


def cpu_model() -> str | None:
    """The CPU's model name, read the OS's way; None where it does not say."""
    found = cpuinfo("model name") if system() == "Linux" else sysctl("machdep.cpu.brand_string")
    return found or platform.processor() or None


def cpu_flags() -> set[str] | None:
    """The CPU's feature flags in lower case (Linux's /proc/cpuinfo names: ``sse4_2``, ``avx``, ``avx2``,
    ``fma``, ``avx512f``, ...); on an Intel Mac from ``machdep.cpu.features`` and ``machdep.cpu.leaf7_features``
    (renamed to Linux's names); an empty set on an Apple-silicon Mac (NEON, no x86 flags); None where unknown."""
    if system() == "Linux":
        flags = cpuinfo("flags")
        return set(flags.lower().split()) if flags is not None else None
    if system() == "Darwin":
        words = " ".join(filter(None, (sysctl("machdep.cpu.features"), sysctl("machdep.cpu.leaf7_features"))))
        if words:
            return {_MAC_FLAG_NAMES.get(w, w) for w in words.lower().split()}
        return set() if platform.machine().lower() in ("arm64", "aarch64") else None
    return None


def _linux_caches() -> dict:
    out = {}
    try:
        entries = sorted(os.listdir(SYSFS_CACHE))
    except OSError:
        return out
    for entry in entries:
        if not entry.startswith("index"):
            continue
        try:
            level, kind, size = (_read(f"{SYSFS_CACHE}/{entry}/{f}") for f in ("level", "type", "size"))
        except OSError:
            continue
        size = _parse_size(size)
        if kind != "Instruction" and size is not None:
            out[f"L{level}d" if level == "1" else f"L{level}"] = size
    return out


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read().strip()


def _parse_size(text: str) -> int | None:
    """sysfs's "48K", "2048K", "32M" (or plain bytes) as bytes; None when unreadable."""
    text = text.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    digits = text[:-1] if mult > 1 else text
    return int(digits) * mult if digits.isdigit() else None


def _mac_caches() -> dict:
    out = {}
    for key, names in (("L1d", ("hw.perflevel0.l1dcachesize", "hw.l1dcachesize")),
                       ("L2", ("hw.perflevel0.l2cachesize", "hw.l2cachesize")),
                       ("L3", ("hw.perflevel0.l3cachesize", "hw.l3cachesize"))):
        size = next((v for v in map(_sysctl_int, names) if v), None)
        if size:
            out[key] = size
    return out


def cache_sizes() -> dict:
    """Data-cache sizes in bytes of CPU 0 (on a Mac with two kinds of cores: of the performance cores):
    ``{"L1d": ..., "L2": ..., "L3": ...}``, the levels the OS reports; {} where it reports none."""
    if system() == "Linux":
        return _linux_caches()
    if system() == "Darwin":
        return _mac_caches()
    return {}


def affinity() -> list[int] | None:
    """The CPU numbers this process may run on, sorted (``taskset``/cgroups on Linux); None where the OS has no
    ``os.sched_getaffinity`` (macOS, Windows) or refuses it."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def usable_cpus() -> int:
    """Cores this process may use: the size of its affinity where the OS says, else ``os.cpu_count()``, else 1."""
    cpus = affinity()
    return len(cpus) if cpus else (os.cpu_count() or 1)


def load_average() -> tuple[float, float, float] | None:
    """The 1, 5 and 15 minute load averages (runnable threads, averaged); None where the OS does not say
    (Windows)."""
    try:
        return tuple(float(x) for x in os.getloadavg())
    except (AttributeError, OSError):
        pass
    text = (sysctl("vm.loadavg") or "").strip("{} ")
    try:
        values = tuple(float(x) for x in text.split()[:3])
    except ValueError:
        return None
    return values if len(values) == 3 else None


def unknown(what: str) -> str:
    """``"unknown here (<why>)"``: ``what`` (e.g. "cache sizes") is not told by this OS, said the way it is
    looked for here."""
    if not isinstance(what, str) or not what.strip():
        raise ValueError(f"what: expected the fact's name such as 'cache sizes', got {what!r}")
    where = {"Linux": "/proc and /sys do not say", "Darwin": "sysctl does not say"}.get(
        system(), f"{system() or 'this OS'} has no reader for it in course_lib")
    return f"unknown here ({what}: {where})"
