"""A machine's record from what ``benchmarks/which.py`` (or chapter 12's notebook) *printed* there, for runs made
before ``--record`` existed: the same ``machine.json`` + ``record.json`` that ``which.py --record DIR`` writes.

    python benchmarks/results/convert_printed.py --which which.txt --json machine-measured.json --out DIR
    python benchmarks/results/convert_printed.py --notebook 12_which_parallelism.ipynb --json machine.json --out DIR

What the printout holds is kept as printed (rounded to the digits it shows); what it never printed is taken from
``--json`` (a ``Machine.measure()`` of the same machine, saved as JSON -- possibly another run) and named in the
record's ``missing``; the hold-out rows' problems and options (which the printout names but does not spell out)
come from this course's configuration builders, with P set to the printed core count.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from dataclasses import fields

from course_lib.experiments.cost_model import configurations, fresh
from course_lib.experiments.cost_model.machine import FORMAT, Machine
from course_lib.experiments.cost_model.problem import Problem

_UNIT = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
_NUM = r"([-+0-9.eE]+)"


def seconds(text: str) -> float:
    m = re.fullmatch(_NUM + r"\s*(ns|µs|us|ms|s)", text.strip())
    if not m:
        raise ValueError(f"text: not a time: {text!r}")
    return float(m.group(1)) * _UNIT[m.group(2)]


def _first(text: str) -> float:
    return float(re.match(_NUM, text.strip()).group(1))


# label -> (field, parse) for the one-number rows of Machine.table()
_SCALAR = {"cores": ("cores", lambda v: int(v)), "SIMD lanes (float32)": ("simd_lanes", lambda v: int(v)),
           "GEMM peak, 1 core": ("gemm_gflops_core", _first), "GEMM peak, all cores": ("gemm_gflops_all", _first),
           "GEMV, weights in cache": ("gemv_gflops", _first), "stream bandwidth, 1 core": ("bandwidth_core_gbs", _first),
           "stream bandwidth, all cores": ("bandwidth_all_gbs", _first), "one library call": ("call_s", seconds),
           "thread-pool hand-off": ("handoff_s", seconds), "numba parallel region": ("region_s", seconds),
           "thread pool started, per call": ("pool_start_s", seconds),
           "threads: pool start and first GIL contention": ("gil_start_s", lambda v: seconds(v.replace(" per call", ""))),
           "wavefront: one diagonal's barrier": ("barrier_s", seconds), "one dependent step": ("step_latency_s", seconds),
           "one step of the lane scan": ("lane_step_s", seconds), "scan backward, per element": ("scan_back_s", seconds),
           "MPI latency": ("mpi_latency_s", seconds), "MPI bandwidth": ("mpi_bandwidth_gbs", _first)}


def _row(q: str, v: str, src: str, d: dict, printed: set) -> None:
    """One printed row of the machine table into the machine's fields ``d`` (and its source)."""
    busy = src.split("; BUSY: ", 1)
    if len(busy) == 2:
        src = busy[0]
    if q in _SCALAR:
        k, parse = _SCALAR[q]
        d[k] = parse(v)
    elif q == "GIL: share of one-after-another time":
        k = "gil_serial"
        d[k] = tuple((float(t) * 1e-6, float(p) / 100) for p, t in re.findall(r"(\d+)% at ([0-9.]+) µs", v))
    elif q == "GEMM at small shapes, 1 core":
        k = "gemm_table"
        d[k] = {**d.get(k, {}), **{(int(r), int(z)): float(g) for r, z, g in re.findall(r"(\d+)x(\d+): ([0-9.]+)", v)}}
    elif q.startswith("stream bandwidth in the "):
        k = "cache_bw"
        mib = int(re.search(r"(\d+) MiB", q).group(1))
        one, allc = re.findall(r"([0-9.]+) GB/s", v)
        d[k] = (mib << 20, float(one), float(allc))
    elif q == "MGRIT residual per iteration":
        k = "mgrit_convergence"
        rho, c = re.match(r"x([0-9.]+) \(first: ([0-9.e+-]+) x", v).groups()
        d[k] = (float(rho), float(c))
    elif q.startswith("channel scan, "):
        k = "channel_rates"
        call, step, elem = (float(x) for x in re.findall(r"([0-9.]+) (?:µs|ns)", v))
        d[k], d["channel_threads"] = (step * 1e-9, elem * 1e-9, call * 1e-6), int(re.search(r"(\d+) threads", q).group(1))
        printed.add("channel_threads")
    elif q.startswith("DEER's counted bytes, "):
        k = "deer_gbs"
        d.setdefault(k, {})[q.rsplit(" ", 1)[1]] = _first(v)
    elif q.startswith("one counted call, ") or q.startswith("cell kernel, "):
        k = "call_costs" if q.startswith("one") else "kernel_gflops"
        kind, mode = q.split(", ", 1)[1].split()
        d.setdefault(k, {})[(kind, mode)] = seconds(v) if k == "call_costs" else _first(v)
    elif q == "GPU":
        k = "gpu"
    else:
        raise ValueError(f"q: a machine-table row this converter does not know: {q!r}")
    printed.add(k)
    d["source"][k] = src
    if len(busy) == 2:
        d["busy"][k] = busy[1]
    if k == "lane_step_s" and "per call" in src:
        d["lane_call_s"] = seconds(re.search(r"\(and ([0-9.]+ µs) per call\)", src).group(1))
        printed.add("lane_call_s")


def machine_from(lines: list[str], other: dict) -> tuple[Machine, list[str]]:
    """The machine of a printed table (``lines``), fields it never printed from ``other`` (a saved machine's
    JSON); returns it and the sentences saying what came from where."""
    base = Machine.load(_tmp_json(other))
    d = {"source": {}, "busy": {}, "gemm_table": dict(base.gemm_table)}
    printed: set = set()
    for line in lines:
        parts = re.split(r"\s{2,}", line.strip(), maxsplit=2)
        if len(parts) == 3:
            _row(*parts, d, printed)
    kw = {f.name: getattr(base, f.name) for f in fields(Machine) if f.name != "noise"}
    kw.update({k: d[k] for k in printed | {"gemm_table", "busy"} if k in d})
    kw["source"] = {**base.source, **d["source"]}
    m = Machine(**kw)
    grid = len(_printed_gemm(lines) & set(m.gemm_table))
    unprinted = sorted(f.name for f in fields(Machine) if f.name not in printed | {"noise", "source", "busy", "gemm_table"})
    notes = [f"constants as printed (rounded to the digits shown): {', '.join(sorted(printed))}",
             f"gemm_table: {grid} of {len(m.gemm_table)} grid points as printed, the others from the saved JSON "
             "(another Machine.measure() on the same machine)",
             f"never printed, from the saved JSON: {', '.join(unprinted)}; noise: none (the printout carried no "
             "warning about the machine's constants)"]
    return m, notes


def _printed_gemm(lines) -> set:
    row = next((ln for ln in lines if ln.startswith("GEMM at small shapes")), "")
    return {(int(r), int(z)) for r, z in re.findall(r"(\d+)x(\d+): ", row)}


def _tmp_json(other: dict) -> str:
    """``other`` (a Machine dumped with Python-repr tuple keys, "('gru', 'training')") in Machine.save's format."""
    def key(k):
        return "|".join(str(p) for p in ast.literal_eval(k)) if k.startswith("(") else k
    data = {k: ({key(x): y for x, y in v.items()} if isinstance(v, dict) and k not in ("source", "busy") else v)
            for k, v in other.items() if k != "noise"}
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"convert-machine-{os.getpid()}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(dict(data, format=FORMAT), f)
    return path


def _problem(desc: str) -> dict:
    kind, rest = desc.split(" ", 1)
    mode, rest = rest.split(", ", 1)
    kw = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", rest)}
    return {**vars(Problem(kind, mode, **kw))}


def holdout_from(lines: list[str], explains: list[str], cores: int) -> dict:
    """The hold-out rows of a printed table, with each configuration's problem and options from the builders."""
    rows, built = [], {}
    for line in lines:
        parts = re.split(r"\s{2,}", line.strip())
        if len(parts) < 6 or parts[0] == "configuration" or parts[4] not in ("cpu", "wall"):
            continue
        config, label, pred, meas, clock = parts[:5]
        if config not in built:
            prob, entries, _, _ = configurations.CONFIGS[config](True)
            built[config] = (prob, {k: (meth, o) for k, (meth, o, _) in entries.items()})
        prob, entries = built[config]
        key = next(k for k in entries if re.sub(r"\d+", "N", k) == re.sub(r"\d+", "N", label))
        meth, opts = entries[key]
        opts = {k: (cores if k == "P" and v > 1 else v) for k, v in opts.items()}
        rows.append({"config": config, "label": label, "method": meth, "opts": opts, "problem": vars(prob),
                     "predicted": seconds(pred), "measured": seconds(meas), "clock": clock})
    unreliable = {}
    for ex in explains:
        m = re.match(r"(.+?): no conclusion -- (.+)$", ex)
        if m:
            unreliable[m.group(1)] = [m.group(2)]
    return {"rows": rows, "unreliable": unreliable}


def fresh_from(lines: list[str]) -> list[dict]:
    """The fresh-problem table as printed: per problem, every method's predicted and measured time."""
    out, cur = [], None
    for line in lines:
        if line.startswith("problem ") or line.startswith("advisor:"):
            continue
        if line.strip().startswith("->"):
            clock = ("cpu" if "every method on one thread" in line else
                     "cpu+wall" if "one-thread methods by CPU clock" in line else "wall")
            bad = re.search(r"\[unreliable run: (.+)\]", line)
            cur.update(clock=clock, unreliable=[bad.group(1)] if bad else [])
            continue
        desc, rest = line[:58].strip(), line[58:]
        parts = rest.split()
        if len(parts) < 5:
            continue
        if desc:
            cur = {"problem": _problem(desc), "predicted": {}, "measured": {}, "advised": None, "fastest": None}
            out.append(cur)
        meth = parts[0]
        cur["predicted"][meth] = seconds(" ".join(parts[1:3]))
        cur["measured"][meth] = seconds(" ".join(parts[3:5]))
        if "<- advised" in rest:
            cur["advised"] = meth
        if "(fastest)" in rest:
            cur["fastest"] = meth
    return out


def _sections(text: str) -> dict:
    """which.py's printout cut into its numbered sections."""
    out, name = {}, None
    for line in text.splitlines():
        m = re.match(r"== (\d)\. ", line)
        if m:
            name = m.group(1)
            out[name] = []
        elif name:
            out[name].append(line)
    return out


def from_which(text: str, other: dict) -> tuple[Machine, dict, list[str]]:
    s = _sections(text)
    machine, notes = machine_from(s["1"], other)
    hold = [ln for ln in s["2"] if not ln.startswith(("hold-out:", "unreliable", "clock "))]
    explains = [ln for ln in s["2"] if re.match(r"\d\d .+?: ", ln) and " -- " in ln or "first choice" in ln]
    fresh_lines = [ln for ln in s["3"] if ln.strip() and not ln.startswith(("claim", "000.", "001.", "002.", "end:"))]
    return machine, {"holdout": holdout_from(hold, explains, machine.cores), "fresh": fresh_from(fresh_lines)}, notes


def from_notebook(path: str, other: dict) -> tuple[Machine, dict, list[str], str]:
    nb = json.load(open(path, encoding="utf-8"))
    texts = {}
    for i, c in enumerate(nb["cells"]):
        for o in c.get("outputs", []):
            t = "".join(o.get("text", []))
            if t:
                texts.setdefault(i, []).append(t)
    joined = {i: "".join(t) for i, t in texts.items()}
    mach = next(i for i, t in joined.items() if t.startswith("cores "))
    table = next(i for i, t in joined.items() if t.startswith("configuration "))
    expl = next(i for i, t in joined.items() if "first choice" in t or "advises nothing here" in t)
    fr = next(i for i, t in joined.items() if t.startswith("problem "))
    machine, notes = machine_from(joined[mach].splitlines(), other)
    rec = {"holdout": holdout_from(joined[table].splitlines(), joined[expl].splitlines(), machine.cores),
           "fresh": fresh_from(joined[fr].splitlines())}
    printed = "\n\n".join(f"--- cell {i}\n{joined[i]}" for i in (mach, table, expl, fr))
    return machine, rec, notes, printed


def write(out: str, machine: Machine, rec: dict, notes: list[str], missing: list[str], meta: dict) -> None:
    os.makedirs(out, exist_ok=True)
    machine.save(os.path.join(out, "machine.json"))
    with open(os.path.join(out, "record.json"), "w", encoding="utf-8") as f:
        json.dump({"format": fresh.RECORD_FORMAT, "notes": notes, "missing": missing, **meta, **rec}, f, indent=1,
                  ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--which", help="which.py's printout")
    ap.add_argument("--notebook", help="an executed 12_which_parallelism.ipynb")
    ap.add_argument("--json", required=True, help="a saved Machine.measure() of the same machine (fields not printed)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--note", action="append", default=[])
    a = ap.parse_args()
    other = json.load(open(a.json, encoding="utf-8"))
    if a.which:
        m, rec, notes = from_which(open(a.which, encoding="utf-8").read(), other)
    else:
        m, rec, notes, printed = from_notebook(a.notebook, other)
    missing = ["the fresh problems' per-round times and noise details (only the medians were printed)",
               "the hold-out rows' problems and options: from this course's configuration builders (P = the cores)",
               "the load average during the run" if a.notebook else "",
               "the machine's noise object (the printout only says whether it warned)"]
    write(a.out, m, rec, [*a.note, *notes], [x for x in missing if x], {"converted_from": os.path.basename(
        a.which or a.notebook)})
    if a.which:
        shutil.copy(a.which, os.path.join(a.out, "which.txt"))
    else:
        with open(os.path.join(a.out, "printed.txt"), "w", encoding="utf-8") as f:
            f.write(printed)
    shutil.copy(a.json, os.path.join(a.out, "machine-measured-other-run.json"))
    print(f"wrote {a.out}: {len(rec['holdout']['rows'])} hold-out rows, {len(rec['fresh'])} fresh problems")
