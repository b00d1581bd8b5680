"""Record mode: every verdict line and every pairs decision of a notebook run, as JSON (teaching layer).

With ``COURSE_RECORD=<dir>`` set, each call of :func:`course_lib.teaching.verdict.verdict`, each seed-004
goal verdict, each computed comparison sentence (:func:`course_lib.teaching.verdict.which_faster`) and each
``faster()`` decision (``Comparison.faster``, ``Noise.faster``: both end in
:meth:`course_lib.core.intervals.Ratio.faster`) appends one record -- everything needed to render it
again, and what it printed -- to ``<dir>/<notebook stem>.json`` (``<dir>/solutions/<stem>.json`` for a
solution worksheet). The notebook's name comes from ``COURSE_NOTEBOOK``, which ``python -m course_lib
notebooks --execute`` passes to the kernel. The first record a process writes starts the file afresh,
with the machine's facts (:func:`machine_facts`) once at its head::

    {"notebook": "notebooks/08_scan", "machine": {...}, "records": [{"kind": "verdict", ...}, ...]}

Without ``COURSE_RECORD`` nothing here does anything: no hook is registered, no file is read or written.
:mod:`course_lib.teaching.replay` renders the records again with the current code and checks them.
"""
from __future__ import annotations

import datetime
import json
import os
import subprocess
from pathlib import Path

from ..core import backend, intervals, platform_facts, timing

__all__ = ["ENV_DIR", "ENV_NOTEBOOK", "directory", "record_path", "machine_facts", "noise_summary",
           "verdict_made", "said", "start", "forget", "attach_cells", "load"]

ENV_DIR = "COURSE_RECORD"          # where recordings go; unset: record mode is off
ENV_NOTEBOOK = "COURSE_NOTEBOOK"   # "notebooks/08_scan" (set by the notebooks runner)
_ROOT = Path(__file__).resolve().parents[2]
_STARTED: set[str] = set()         # files this process has started afresh


def directory() -> Path | None:
    """The recording folder (``COURSE_RECORD``), or None when record mode is off."""
    value = os.environ.get(ENV_DIR, "").strip()
    return Path(value) if value else None


def record_path(folder, name: str) -> Path:
    """Where the records of notebook ``name`` ("notebooks/08_scan", "solutions/08_scan", or any name) go."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"name: expected a notebook name such as 'notebooks/08_scan', got {name!r}")
    where, _, stem = name.strip().rpartition("/")
    sub = "solutions" if where.endswith("solutions") else ""
    return Path(folder) / sub / f"{stem}.json"


def _git(*args: str) -> str:
    """git's answer in the checkout; "" from an installed course (no checkout around course_lib) or without git."""
    if not (_ROOT / ".git").exists():
        return ""
    try:
        return subprocess.run(["git", *args], cwd=_ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _blas_threads() -> int | None:
    try:
        from threadpoolctl import threadpool_info

        return next((p.get("num_threads") for p in threadpool_info() if p.get("user_api") == "blas"), None)
    except Exception:  # pragma: no cover - threadpoolctl missing or failing
        return None


def machine_facts() -> dict:
    """What the verdicts of a run may depend on: CPU, vector lanes (from the flags), caches, cores and
    affinity, thread settings, BLAS, the load at the start, the budget, the date and the code's commit."""
    import numba

    simd = backend.simd_bytes()
    blas = backend.blas_vector_bits()
    load = platform_facts.load_average()
    return {
        "cpu": backend.cpu_model(), "simd_bytes": simd, "lanes_float32": simd // 4, "lanes_float64": simd // 8,
        "caches": backend.cache_sizes(), "cores": backend.cpu_count(),
        "affinity": platform_facts.affinity(),
        "numba_threads": int(numba.config.NUMBA_NUM_THREADS), "blas": blas["blas"], "blas_kernel": blas["kernel"],
        "blas_threads": _blas_threads(),
        "env": {k: os.environ[k] for k in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                           "MKL_NUM_THREADS", "OPENBLAS_CORETYPE") if k in os.environ},
        "loadavg_at_start": list(load) if load else None, "budget": timing.budget(),
        "cuda": backend.cuda_mode(), "versions": backend.versions(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": _git("rev-parse", "--short=12", "HEAD"), "dirty": bool(_git("status", "--porcelain", "--",
                                                                               "course_lib")),
    }


def noise_summary(noise) -> dict | None:
    """A :class:`~course_lib.core.noise.Noise` as plain data (enough to build an equal one again)."""
    if noise is None:
        return None
    return {"ok": noise.ok, "reasons": list(noise.reasons), "spread": noise.spread, "others": noise.others,
            "wide": noise.wide, "busy": noise.busy, "notes": list(noise.notes), "uncertain": list(noise.uncertain),
            "said": list(noise.said), "biased": bool(getattr(noise, "biased", False)),
            "cpu_clock": bool(getattr(noise, "cpu_clock", False))}


def _execution_count() -> int | None:
    """The running cell's execution count ``In[n]`` when inside IPython (the runner maps it to a cell index)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return None
    n = getattr(get_ipython(), "execution_count", None)
    return n - 1 if isinstance(n, int) else None    # IPython counts the running cell before it runs it


def _append(record: dict) -> None:
    folder = directory()
    if folder is None:
        return
    name = os.environ.get(ENV_NOTEBOOK, "").strip() or "unnamed"
    path = record_path(folder, name)
    key = str(path.resolve())
    if key not in _STARTED or not path.exists():
        data = {"notebook": name, "machine": machine_facts(), "records": []}
        _STARTED.add(key)
    else:
        data = json.loads(path.read_text(encoding="utf-8"))
    record["execution_count"] = _execution_count()
    data["records"].append(record)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def verdict_made(kind: str, inputs: dict, line) -> None:
    """Record one verdict line (``kind`` "verdict" or "goal"): its ``inputs`` and what it printed.
    Nothing happens unless ``COURSE_RECORD`` is set."""
    if directory() is None:
        return
    record = {"kind": kind, **inputs, "line": str(line), "outcome": line.outcome, "reason": line.reason}
    record["noise"] = noise_summary(record.get("noise"))
    record["reasons"] = [[bool(cond), text] for cond, text in record.get("reasons", ())]
    if record.get("interval") is not None:
        record["interval"] = [float(v) for v in record["interval"]]
    _append(record)


def said(facts: dict, line: str) -> None:
    """Record one computed sentence that is not a verdict (``verdict.which_faster``): the numbers it was made from
    and what it printed, for the replay's scan of printed patterns. Nothing happens unless ``COURSE_RECORD`` is set."""
    if directory() is None:
        return
    _append({"kind": "said", **facts, "line": str(line)})


def _on_decision(ratio, by: float, answer: str) -> None:
    """The hook :data:`course_lib.core.intervals.DECISION_HOOKS` calls after each ``faster()``."""
    if directory() is None:
        return
    _append({"kind": "faster", "name": ratio.name, "over": ratio.over, "by": float(by), "answer": answer,
             "values": list(ratio.values), "set_aside": ratio.set_aside, "confidence": ratio.confidence,
             "waited": list(ratio.waited) if ratio.waited is not None else None,
             "median": ratio.median, "speedup_interval": list(ratio.speedup_interval),
             "biased": bool(getattr(ratio, "biased", False)),
             "floor": list(ratio.floor) if getattr(ratio, "by_floor", False) else None})


def start() -> bool:
    """Register the decision hook (once) when record mode is on; True when it is registered."""
    if directory() is None:
        return False
    if _on_decision not in intervals.DECISION_HOOKS:
        intervals.DECISION_HOOKS.append(_on_decision)
    return True


def forget(name: str) -> None:
    """Remove the notebook ``name``'s recording before the runner executes it again: a run that records fewer
    lines (or none) must not leave an earlier run's behind, under an earlier machine and commit. Nothing happens
    when record mode is off."""
    folder = directory()
    if folder is not None:
        record_path(folder, name).unlink(missing_ok=True)


def attach_cells(nb, name: str) -> None:
    """After the runner executed ``nb`` (named ``name``), write each record's cell index (0-based, all
    cells counted) beside its execution count; a notebook that recorded nothing gets a file with no records,
    so a replay counts it. Nothing happens when record mode is off."""
    folder = directory()
    if folder is None:
        return
    path = record_path(folder, name)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"notebook": name, "machine": machine_facts(), "records": []}, indent=1) + "\n",
                        encoding="utf-8")
        return
    by_count = {c.get("execution_count"): i for i, c in enumerate(nb.cells) if c.cell_type == "code"}
    data = json.loads(path.read_text(encoding="utf-8"))
    for r in data["records"]:
        r["cell"] = by_count.get(r.get("execution_count"))
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def load(path) -> dict:
    """One recording file: ``{"notebook", "machine", "records"}`` (ValueError naming the file when it is not one)."""
    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not {"machine", "records"} <= set(data):
        raise ValueError(f"path: {path} is not a recording (expected keys 'machine' and 'records')")
    return data


start()
