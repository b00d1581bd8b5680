"""Rebuild recordings from the printed verdict lines of notebooks executed elsewhere (older code).

    PYTHONPATH=. python recordings/reconstruct.py ../shared/foreign-runs/zen3-avx2-busy \\
        recordings/zen3-avx2-busy-reconstructed --machine zen3-avx2-busy \\
        --settings-from recordings/zen5-avx512-busy recordings/zen5-avx512-one-core

Each printed line "Seed S, WHERE (CONDITIONS): VALUE.  Here (HERE): OURS.  VERDICT" is matched to a claim
of the current registry by its head (or a seed-004 goal by its place), and turned into a record: ours,
here, the printed outcome and reason, and -- for an abstaining line -- the noise guard's reasons as
printed. What the printed line does not say is taken from this machine's recordings of the same claim in
the same notebook (pivot, within, unit; "pivot_from" names where), or left at the defaults. Intervals,
reasons whose condition was False and pair decisions were never printed: they are not invented.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from course_lib.teaching.claims import CLAIMS, seed004

_ZEN3 = {"cpu": "AMD EPYC (Zen 3)", "simd_bytes": 32, "lanes_float32": 8, "lanes_float64": 4,
         "caches": {"L1d": 32 << 10, "L2": 512 << 10, "L3": 32 << 20}, "cores": 2, "affinity": [0, 1],
         "blas": "OpenBLAS (no OPENBLAS_CORETYPE override)", "budget": "full", "loadavg_at_start": None,
         "load_note": "1-minute load 3.8-9.4 while the notebooks ran (../shared/foreign-runs/README.md)",
         "commit": "older than e51735f (the course as it was before issue 23's wave 3)", "reconstructed": True}
#: the machines of ../shared/foreign-runs/, as its README describes them
MACHINES = {
    "zen3-avx2-busy": {**_ZEN3, "numba_threads": 2, "blas_threads": 2, "env": {}},
    "zen3-avx2-one-thread": {**_ZEN3, "numba_threads": 1, "blas_threads": 1,
                             "env": {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}},
}
OUTCOMES = {"No verdict": "unreliable", "Agrees": "agrees", "The opposite": "opposite", "Same direction, larger":
            "larger", "Same direction, smaller": "smaller", "Holds here": "agrees", "Does not hold here": "opposite"}
_TAIL = re.compile(r"^(?P<here>.*?)\): (?P<ours>-?\d[\d.]*(?:e[-+]?\d+)?)(?P<unit>[^.]*?)\.  "
                   r"(?P<rest>(?:No verdict|Same direction|Agrees|The opposite).*)$")


def _claim_head(c) -> str:
    who = c.source if c.seed == "beyond" else c.seed
    return f"Seed {who}, {c.where} ({c.conditions}): {c.formatted()}.  Here ("


def _outcome(rest: str) -> str | None:
    return next((o for k, o in OUTCOMES.items() if rest.startswith(k)), None)


def _noise(rest: str) -> dict | None:
    if not rest.startswith("No verdict: "):
        return None
    why = re.split(r" -- re-run when the machine is quiet\.|\.  What can be said: ", rest[len("No verdict: "):])[0]
    reasons = why.split("; ")
    return {"ok": False, "reasons": reasons, "notes": reasons, "spread": 0.0, "others": None, "wide": False,
            "busy": False, "uncertain": [], "said": []}


def _reason(rest: str) -> str:
    if " -- " not in rest or rest.startswith("No verdict"):
        return ""
    return rest.split(" -- ", 1)[1].removesuffix(".")


def parse_line(line: str, cell: int) -> dict | None:
    """One printed verdict line as a record (None when it is not a verdict line of a known claim or goal)."""
    for cid, c in CLAIMS.items():
        head = _claim_head(c)
        if line.startswith(head):
            m = _TAIL.match(line[len(head):])
            if not m:
                return None
            rest = m["rest"]
            reason = _reason(rest)
            return {"kind": "verdict", "reconstructed": True, "claim": cid, "seed_value": c.value,
                    "ours": float(m["ours"]), "here": m["here"], "pivot": 1.0, "within": 1.5, "unit": None,
                    "interval": None, "noise": _noise(rest), "reasons": [[True, reason]] if reason else [],
                    "line": line, "outcome": _outcome(rest), "reason": reason, "cell": cell, "pivot_from": "default"}
    for gid in seed004.GOALS:
        head = seed004.goal(gid) + ".  Here ("
        if line.startswith(head):
            here, _, rest = line[len(head):].partition("): ")
            ours, _, verdict_words = rest.partition(".  ")
            outcome = _outcome(verdict_words)
            if outcome is None:
                return None
            reason = _reason(verdict_words)
            return {"kind": "goal", "reconstructed": True, "goal": gid, "holds": outcome == "agrees", "ours": ours,
                    "here": here, "reasons": [[True, reason]] if reason else [], "noise": _noise(verdict_words),
                    "line": line, "outcome": outcome, "reason": reason, "cell": cell}
    return None


def _printed_lines(nb: dict):
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        for out in cell.get("outputs", []):
            text = out.get("text", "")
            text = "".join(text) if isinstance(text, list) else text
            for line in text.splitlines():
                if line.startswith("Seed ") and "Here (" in line:
                    yield i, line


def _settings_from(recordings: list[Path], stem: str) -> dict:
    """claim id -> (pivot, within, unit, where) from this machine's recordings of the same notebook."""
    out = {}
    for run in recordings:
        path = run / f"{stem}.json"
        if path.exists():
            for r in json.loads(path.read_text())["records"]:
                if r["kind"] == "verdict" and r["claim"] not in out:
                    out[r["claim"]] = (r["pivot"], r["within"], r["unit"], f"{run.name}/{stem}.json")
    return out


def reconstruct(source: Path, target: Path, machine: dict, recordings: list[Path]) -> dict:
    """Write ``target/<stem>.json`` for every notebook in ``source``; returns stem -> (parsed, not parsed)."""
    target.mkdir(parents=True, exist_ok=True)
    summary = {}
    for nb_path in sorted(source.glob("[0-9][0-9]_*.ipynb")):
        nb = json.loads(nb_path.read_text())
        settings = _settings_from(recordings, nb_path.stem)
        records, skipped = [], []
        for cell, line in _printed_lines(nb):
            r = parse_line(line, cell)
            if r is None:
                skipped.append(f"cell {cell}: {line[:100]}")
                continue
            if r["kind"] == "verdict" and r["claim"] in settings:
                r["pivot"], r["within"], r["unit"], r["pivot_from"] = settings[r["claim"]]
            records.append(r)
        summary[nb_path.stem] = (len(records), skipped)
        if records:
            data = {"notebook": f"notebooks/{nb_path.stem}", "machine": machine, "records": records}
            (target / f"{nb_path.stem}.json").write_text(json.dumps(data, indent=1) + "\n")
    return summary


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", type=Path, help="folder of executed .ipynb files")
    p.add_argument("target", type=Path, help="recording folder to write")
    p.add_argument("--machine", choices=sorted(MACHINES), required=True, help="which machine ran them")
    p.add_argument("--settings-from", type=Path, nargs="*", default=[],
                   help="recording folders of this machine to take pivot/within/unit from")
    args = p.parse_args(argv)
    machine = MACHINES[args.machine]
    for stem, (n, skipped) in reconstruct(args.source, args.target, machine, args.settings_from).items():
        print(f"{stem}: {n} verdict line(s) parsed" + "".join(f"\n  not a verdict line of a known claim: {s}"
                                                                for s in skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main())
