"""Replay a recorded run: render every verdict again with the current code, and check it (teaching layer).

A recording (:mod:`course_lib.teaching.record`) holds, per notebook, the machine's facts and every verdict
line and pairs decision with its inputs. :func:`replay` renders each again from those inputs with the code
as it is now, and reports whether the outcome is the same, and every *contradiction* -- a line that its own
numbers or its machine contradict:

- "agrees" although ours is beyond ``within`` of the seed's value;
- a direction inconsistent with ours vs the seed's on either side of ``pivot`` (or any "direction" at all
  without a pivot);
- a concluded verdict whose recorded interval allows more than one outcome, or that concluded on an
  unreliable run with no interval and no spread that decides it;
- a printed reason whose condition was False (or a goal said to hold that did not, and back);
- an explanation (the printed reason, or ``here``) naming a machine fact -- a core count, a number of
  SIMD lanes, a cache size, or data that "fits in" a cache level -- that the recording's machine does not have;
- a pairs decision ("yes"/"no") its own interval does not support;
- a reason naming a core count for a quantity measured on one core (``cores_used``).

Beside the contradictions it lists every printed pattern its own numbers contradict
(:mod:`course_lib.teaching.printed`: "faster" within the no-difference band, a stated factor, "every value
between ..."), as printed ("PRINTED (old)": history) and as the current code prints it ("PRINTED NOW"), and
every abstention that each value its recorded noise allows would decide ("DECIDABLE"); computed comparison
sentences (``said`` records, :func:`~course_lib.teaching.verdict.which_faster`) are rendered again too.

``python -m course_lib replay DIR [DIR ...] [--against QUIET_DIR]`` prints a counts table per notebook
(verdicts concluded / abstained / contradicted, as recorded and as rendered now, printed patterns contradicted,
decisions made / undecided / contradicted) and every contradiction and changed outcome; it exits 1 when there
is a contradiction, a pattern the current rendering contradicts, or a decidable abstention. A recording reconstructed from
the printed lines of older code (its machine says ``"reconstructed": true``) lists the contradictions of
those lines as "OLD CODE" and fails only on the current code's. ``--against`` also lists the
concluded verdicts whose outcome differs from the reference run's (matched by claim and occurrence).
"""
from __future__ import annotations

import contextlib
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..core import intervals
from ..core.noise import Noise
from . import busy_goal, printed, record
from .claims import CLAIMS, seed004
from .verdict import NO_DIFFERENCE, NO_EFFECT, factor, judge, relevant, rerun_margin, verdict, which_faster

__all__ = ["Checked", "check_record", "machine_slips", "replay_file", "replay", "counts", "table", "machines",
           "disagreements", "recording_dirs"]

ABSTAINED = ("unreliable", "cannot tell")
SAME_SIDE = ("agrees", "smaller", "larger", "direction")   # outcomes that say: the seed's direction


def compatible(a: str, b: str) -> bool:
    """Do two concluded outcomes of one claim say the same? Equal, or one is ``"direction"`` (the size not placed)
    and the other a size band on the seed's side."""
    return a == b or ("direction" in (a, b) and a in SAME_SIDE and b in SAME_SIDE)


@dataclass
class Checked:
    """One recorded verdict or decision, re-rendered and checked."""

    notebook: str
    kind: str                # "verdict", "goal" or "faster"
    label: str               # claim id, goal id, or "name over other by 1.1x"
    cell: int | None
    recorded: str            # the recorded outcome (or answer)
    now: str | None          # the outcome the current code gives (None: cannot be rendered now)
    recorded_contradictions: list[str] = field(default_factory=list)   # of the line as it was printed
    now_contradictions: list[str] = field(default_factory=list)        # of the line the current code prints
    note: str = ""
    suspect: str = ""        # concluded although the noise guard called the pairs biased (not a contradiction)
    printed: list[str] = field(default_factory=list)       # printed patterns its numbers contradict, as printed
    printed_now: list[str] = field(default_factory=list)   # ... and as the current code prints it
    decidable: str = ""      # the current code abstains although every value its recorded noise allows decides
    cores_used: int | None = None   # what the judged quantity ran on (verdict.COUNTED: counted; None: not stated)
    line: str = ""           # the line as printed
    reason: str = ""         # the recorded reason (an abstention's: the noise guard's)

    @property
    def contradictions(self) -> list[str]:
        """Every contradiction: the printed line's, then the current rendering's that the printed line lacks."""
        return self.recorded_contradictions + [f"now: {x}" for x in self.now_contradictions
                                               if x not in self.recorded_contradictions]

    @property
    def concluded(self) -> bool:
        return self.recorded not in ABSTAINED

    @property
    def changed(self) -> bool:
        return self.now != self.recorded


# --------------------------------------------------------------------------- machine facts in words
_UNITS = {"kib": 1 << 10, "kb": 1 << 10, "mib": 1 << 20, "mb": 1 << 20}
_NUM = r"(?<![\d.])(\d+(?:\.\d+)?)"
_SIZE = _NUM + r" ?(KiB|KB|MiB|MB)\b"
_LEVEL = r"(L1d?|L2|L3)\b"
_CORES = re.compile(r"(?<![\d.])(\d+) (?:CPU |usable |physical )?cores?\b")
_LANES = re.compile(r"(?<![\d.])(\d+) (?:SIMD |float32 |float64 |vector )?lanes\b")
_CACHE_IS = re.compile(_SIZE + r" " + _LEVEL)                     # "1024 KB L2 cache"
_FITS = re.compile(_SIZE + r"\)?[^.;:]{0,60}?\b(does not fit|doesn't fit|fits?)\b(?: in(?:to)?)?"
                   r"(?: one core's| this CPU's| the)?(?: \d+ ?(?:KiB|KB|MiB|MB))? " + _LEVEL)


def _about_the_seed(text: str, start: int) -> bool:
    """A number that belongs to the seed's machine ("not 61 cores", "the seed's 2 cores")."""
    before = text[max(0, start - 16):start].lower()
    return "seed" in before or before.rstrip().endswith(("not", "than", "of the"))


def _cache(machine: dict, level: str) -> int | None:
    caches = machine.get("caches") or {}
    return caches.get("L1d" if level.startswith("L1") else level)


def machine_slips(text: str, machine: dict, cores_used: int | None = None) -> list[str]:
    """Machine facts named in ``text`` that ``machine`` (a recording's facts) contradicts (``cores_used``: the
    cores the judged quantity ran on, which the text may name too: "1 core (sequential scan)" on 2 cores)."""
    if not text:
        return []
    out = []
    cores = machine.get("cores")
    usable = {cores, min(cores, machine.get("numba_threads") or cores)} if cores else set()
    if usable and cores_used is not None and cores_used <= cores:
        usable.add(cores_used)
    for m in _CORES.finditer(text):
        if usable and not _about_the_seed(text, m.start()) and int(m.group(1)) not in usable:
            out.append(f"names {m.group(0)!r}, the machine has {cores}")
    lanes = machine.get("lanes_float32")
    for m in _LANES.finditer(text):
        if lanes and not _about_the_seed(text, m.start()) and int(m.group(1)) > lanes:
            out.append(f"names {m.group(0)!r}, the machine's vectors hold {lanes} float32 lanes")
    for m in _CACHE_IS.finditer(text):
        size, real = float(m.group(1)) * _UNITS[m.group(2).lower()], _cache(machine, m.group(3))
        if real and not _about_the_seed(text, m.start()) and abs(size - real) > 0.01 * real:
            out.append(f"names {m.group(0)!r}, the machine's {m.group(3)} is {real >> 10} KiB")
    for m in _FITS.finditer(text):
        size, real = float(m.group(1)) * _UNITS[m.group(2).lower()], _cache(machine, m.group(4))
        fits = not m.group(3).startswith(("does", "doesn"))
        if real and fits != (size <= real):
            out.append(f"says {m.group(0)!r}, the machine's {m.group(4)} is {real >> 10} KiB")
    return out


# --------------------------------------------------------------------------- checking one record
def _noise(summary: dict | None) -> Noise | None:
    if summary is None:
        return None
    noise = Noise(spread=summary.get("spread", 0.0), others=summary.get("others"), wide=summary.get("wide", False),
                  busy=summary.get("busy", False), notes=list(summary.get("notes", [])),
                  uncertain=list(summary.get("uncertain", [])), said=list(summary.get("said", [])),
                  cpu_clock=summary.get("cpu_clock", False))     # older recordings: wall clock assumed
    # pairs skewed by unequal waits (recorded as "biased", or, in older recordings, only as the guard's sentence)
    if summary.get("biased") or any("waited for a core unequally" in u for u in noise.uncertain):
        noise.ratios.append(intervals.Ratio("recorded", "recorded", [1.0], biased=True))
    # older recordings of chapter 10's MPI runs wrote the repeats' spread and the load beside the ranks as notes;
    # the current code (experiments.mgrit) reports them as what they are: a spread and a load
    for note in list(noise.notes):
        spread = _MPI_SPREAD.fullmatch(note)
        beside = _MPI_BESIDE.fullmatch(note)
        if spread:
            noise.notes.remove(note)
            noise.wide = True
        elif beside:
            noise.notes.remove(note)
            noise.others, noise.busy = float(beside.group(1)), True
    return noise


_MPI_SPREAD = re.compile(r"MPI repeats spread by (\d+)%")
_MPI_BESIDE = re.compile(r"other processes kept (\d+(?:\.\d+)?) core\(s\) busy beside the MPI ranks")


def _decidable(r: dict, noise: Noise | None) -> str:
    """For an abstaining verdict: the sentence when every value its recorded noise allows -- its recorded interval,
    or (with only a spread or a load to blame) ours widened by the repeats' spread -- gives one outcome, the
    run-to-run margin of a ratio of times included; else ""."""
    if noise is None or noise.ok or noise.notes or noise.biased:
        return ""
    unit = r.get("unit") or (CLAIMS[r["claim"]].unit if r["claim"] in CLAIMS else "")
    times = unit in ("x", "×")
    if r.get("interval") is not None:
        lo, hi = r["interval"]
    elif noise.uncertain or noise.ratios or (noise.busy and not times):
        return ""
    else:
        w = 1 + (noise.spread if noise.wide else 0.0)
        lo, hi = sorted((r["ours"] / w, r["ours"] * w))
    if times:
        margin, _ = rerun_margin(noise)
        lo, hi = lo / margin, hi * margin
    seed, pivot, within = CLAIMS[r["claim"]].value if r["claim"] in CLAIMS else r["seed_value"], r.get("pivot"), \
        r.get("within", 1.5)
    ends = {judge(seed, v, pivot=pivot, within=within) for v in (lo, hi)}
    if len(ends) == 1:
        return f"abstains, but every value its noise allows ({lo:.3g} to {hi:.3g}) gives '{ends.pop()}'"
    return ""


def _side(v: float, pivot: float) -> int:
    return (v > pivot) - (v < pivot)


def _reason_slips(line: str, reason: str, reasons: list) -> list[str]:
    true = {t for c, t in reasons if c}
    out = [f"prints the reason {t!r}, whose condition was False" for c, t in reasons
           if not c and t not in true and (f"-- {t}" in line or f"although {t}" in line)]
    if reason and reasons and reason not in true:
        out.append(f"chose the reason {reason!r}, which no true condition gives")
    return out


def verdict_contradictions(r: dict, line: str, outcome: str, reason: str, machine: dict) -> list[str]:
    """What contradicts one verdict line (``line``/``outcome``/``reason``) given its recorded inputs ``r``."""
    seed, ours, pivot, within = r["seed_value"], r["ours"], r.get("pivot"), r.get("within", 1.5)
    out = []
    verdict_words = line.partition(f"Here ({r.get('here')}): ")[2] or line
    if outcome == "agrees" and not 1 / within <= factor(seed, ours) <= within:
        out.append(f"says 'agrees' but ours is {factor(seed, ours):.3g}x the seed's value, beyond {within:g}x")
    if pivot is not None and outcome in SAME_SIDE and _side(ours, pivot) != _side(seed, pivot):
        out.append(f"same direction claimed, but ours ({ours:.3g}) and the seed's ({seed:.3g}) lie on opposite "
                   f"sides of {pivot:g}")
    if pivot is not None and outcome == "opposite" and _side(ours, pivot) == _side(seed, pivot):
        out.append(f"'opposite' claimed, but ours ({ours:.3g}) and the seed's ({seed:.3g}) lie on the same side "
                   f"of {pivot:g}")
    if pivot is None and "direction" in verdict_words:
        out.append("speaks of a direction without a pivot")
    noisy = r.get("noise") is not None and not r["noise"]["ok"]
    if outcome == "none":             # no clear effect: ours, and its interval, within NO_EFFECT of the pivot
        lo, hi = r.get("interval") or (ours, ours)
        if pivot is None or not pivot / NO_EFFECT <= min(lo, ours) <= max(hi, ours) <= pivot * NO_EFFECT:
            out.append(f"says 'none' but ours ({ours:.3g}, interval {lo:.3g}..{hi:.3g}) is not within "
                       f"{NO_EFFECT:g}x of the pivot {pivot}")
        elif "agrees" in {judge(seed, v, pivot=pivot, within=within) for v in (lo, ours, hi)}:
            out.append(f"says 'none' but ours ({ours:.3g}) agrees with the seed's {seed:.3g}")
    elif outcome == "direction":      # the seed's side of the pivot for every value allowed, in two size bands
        lo, hi = r.get("interval") or (ours, ours)
        if pivot is None or "opposite" in {judge(seed, v, pivot=pivot, within=within) for v in (lo, hi)}:
            out.append(f"says 'direction' but ours ({ours:.3g}, interval {lo:.3g}..{hi:.3g}) reaches the other side "
                       f"of the pivot {pivot}")
    elif outcome not in ABSTAINED and r.get("interval") is not None:
        ends = {judge(seed, v, pivot=pivot, within=within) for v in r["interval"]}
        if len(ends) > 1:
            lo, hi = r["interval"]
            out.append(f"concluded '{outcome}', but its interval {lo:.3g}..{hi:.3g} allows {' and '.join(sorted(ends))}")
    elif outcome not in ABSTAINED and noisy:
        implied = _decidable({**r, "interval": None}, _noise(r["noise"]))
        if not implied.endswith(f"gives '{outcome}'"):
            out.append(f"concluded '{outcome}' on an unreliable run without an interval"
                       + (f" (its noise allows more: {implied})" if implied else ""))
    used = r.get("cores_used")
    if outcome in ABSTAINED:          # an abstaining line's reason is the noise guard's, not an explanation
        return out + _reason_slips(line, "", r.get("reasons", [])) + machine_slips(r.get("here", ""), machine, used)
    out += _reason_slips(line, reason, r.get("reasons", []))
    if reason and not relevant(reason, used):
        out.append(f"explains a quantity measured on {used} core by a core count: {reason!r}")
    return out + machine_slips(r.get("here", ""), machine, used) + machine_slips(reason, machine, used)


@contextlib.contextmanager
def _quiet_record():
    """Replaying must not record: no COURSE_RECORD, no decision hooks, for the duration."""
    saved, hooks = os.environ.pop(record.ENV_DIR, None), list(intervals.DECISION_HOOKS)
    intervals.DECISION_HOOKS.clear()
    try:
        yield
    finally:
        intervals.DECISION_HOOKS[:] = hooks
        if saved is not None:
            os.environ[record.ENV_DIR] = saved


def _check_verdict(r: dict, machine: dict, notebook: str) -> Checked:
    c = Checked(notebook, "verdict", r["claim"], r.get("cell"), r["outcome"], None, cores_used=r.get("cores_used"),
                line=r.get("line", ""), reason=r.get("reason", ""))
    c.recorded_contradictions = verdict_contradictions(r, r["line"], r["outcome"], r.get("reason", ""), machine)
    if r["claim"] not in CLAIMS:
        c.note = "the claim is no longer in the registry"
        return c
    if CLAIMS[r["claim"]].value != r["seed_value"]:
        c.note = f"the seed's value is now {CLAIMS[r['claim']].value:g}, recorded {r['seed_value']:g}"
    biased = [x for x in (r.get("noise") or {}).get("reasons", []) if "cannot cancel" in x]
    if biased and c.concluded:
        c.suspect = f"concluded from its interval although the noise guard said: {biased[0]}"
    interval = r.get("interval")
    if interval is not None:   # the recorded interval, widened by round-off so it holds ours again
        interval = (min(interval[0], r["ours"]), max(interval[1], r["ours"]))
    noise = _noise(r.get("noise"))
    now = verdict(r["claim"], r["ours"], here=r.get("here", "this machine"), pivot=r.get("pivot"),
                  within=r.get("within", 1.5), reasons=[(bool(k), t) for k, t in r.get("reasons", [])],
                  noise=noise, unit=r.get("unit"), interval=interval, cores_used=r.get("cores_used"))
    c.now = now.outcome
    now_r = {**r, "seed_value": CLAIMS[r["claim"]].value}
    c.now_contradictions = verdict_contradictions(now_r, str(now), now.outcome, now.reason, machine)
    c.printed, c.printed_now = printed.scan(r), printed.scan(now_r, str(now), now.outcome)
    if now.outcome in ABSTAINED:
        c.decidable = _decidable(now_r, _noise(r.get("noise")))
    return c


def _check_goal(r: dict, machine: dict, notebook: str) -> Checked:
    c = Checked(notebook, "goal", r["goal"], r.get("cell"), r["outcome"], None, cores_used=r.get("cores_used"),
                line=r.get("line", ""), reason=r.get("reason", ""))
    c.recorded_contradictions = _goal_contradictions(r, r["line"], r["outcome"], r.get("reason", ""), machine)
    if r["goal"] not in seed004.GOALS:
        c.note = "the goal is no longer in the registry"
        return c
    holds = bool(r["holds"])
    stated = printed.stated_speedup(r["ours"])
    if holds and stated is not None and stated < NO_DIFFERENCE and printed.asks_for_speedup(seed004.goal(r["goal"])):
        holds = False    # a speed-up goal holds beyond the no-clear-difference band (chapter 07's code since then)
        c.note = f"the speed-up it states, {stated:g}x, is within the {NO_DIFFERENCE - 1:.0%} of no clear difference"
    now = seed004.goal_verdict(r["goal"], holds=holds, ours=r["ours"], here=r.get("here", "this machine"),
                               reasons=[(bool(k), t) for k, t in r.get("reasons", [])], noise=_noise(r.get("noise")),
                               cores_used=r.get("cores_used"))
    c.now = now.outcome
    c.now_contradictions = _goal_contradictions({**r, "holds": holds}, str(now), now.outcome, now.reason, machine)
    c.printed, c.printed_now = printed.scan(r), printed.scan({**r, "holds": holds}, str(now), now.outcome)
    return c


def _check_said(r: dict, machine: dict, notebook: str) -> Checked:
    """A computed comparison sentence (``verdict.which_faster``): rendered again from its recorded speeds."""
    c = Checked(notebook, "said", r["line"][:60], r.get("cell"), r["line"], None)
    now = which_faster(dict(r["speeds"]), band=r.get("band", NO_DIFFERENCE))
    c.now = now
    c.printed, c.printed_now = printed.scan(r), printed.scan(r, now)
    return c


def _goal_contradictions(r: dict, line: str, outcome: str, reason: str, machine: dict) -> list[str]:
    out = []
    if outcome == "agrees" and not r["holds"] or outcome == "opposite" and r["holds"]:
        out.append(f"says '{outcome}' but the measured condition 'holds' was {r['holds']}")
    if outcome in ABSTAINED:
        return out + _reason_slips(line, "", r.get("reasons", [])) + machine_slips(r.get("here", ""), machine)
    out += _reason_slips(line, reason, r.get("reasons", []))
    return out + machine_slips(r.get("here", ""), machine) + machine_slips(reason, machine)


def _check_decision(r: dict, machine: dict, notebook: str) -> Checked:
    label = f"{r['name']} over {r['over']} by {r['by']:g}x"
    c = Checked(notebook, "faster", label, r.get("cell"), r["answer"], None)
    lo, hi = r["speedup_interval"]
    if r["answer"] == "yes" and lo < r["by"] or r["answer"] == "no" and hi >= r["by"]:
        c.recorded_contradictions.append(f"answered {r['answer']!r}, but the speed-up's interval is {lo:.3g}..{hi:.3g}")
    ratio = intervals.Ratio(r["name"], r["over"], list(r["values"]), confidence=r.get("confidence", 0.95),
                            set_aside=r.get("set_aside", 0),
                            waited=tuple(r["waited"]) if r.get("waited") is not None else None,
                            biased=bool(r.get("biased", False)))
    if "biased" not in r and r["answer"] == "cannot tell" and (lo >= r["by"] or hi < r["by"]):
        ratio.biased = True     # recorded before the flag was: only a biased ratio says so of a deciding interval
    floor = r.get("floor")
    if floor is None and "floor" not in r and not ratio.biased and not _close(ratio.speedup_interval, (lo, hi)):
        # recorded before the floor was: an interval the pairs do not give came from the fastest rounds
        floor = [r.get("median", 1 / math.sqrt(lo * hi)), 1 / hi, 1 / lo]
    if floor is not None:
        ratio.floor, ratio.by_floor = tuple(floor), True
    c.now = ratio.faster(r["by"])
    lo, hi = ratio.speedup_interval
    if c.now == "yes" and lo < r["by"] or c.now == "no" and hi >= r["by"]:
        c.now_contradictions.append(f"answers {c.now!r}, but the speed-up's interval is {lo:.3g}..{hi:.3g}")
    return c


def _close(a, b, rel: float = 1e-6) -> bool:
    return all(abs(x - y) <= rel * max(abs(x), abs(y)) for x, y in zip(a, b))


_CHECKERS = {"verdict": _check_verdict, "goal": _check_goal, "faster": _check_decision, "said": _check_said}


def check_record(r: dict, machine: dict, notebook: str = "") -> Checked:
    """One record re-rendered with the current code and checked against its numbers and ``machine``."""
    if r.get("kind") not in _CHECKERS:
        raise ValueError(f"r: expected a record of kind {sorted(_CHECKERS)}, got {r.get('kind')!r}")
    with _quiet_record():
        return _CHECKERS[r["kind"]](r, machine, notebook)


# --------------------------------------------------------------------------- whole recordings
def replay_file(path) -> list[Checked]:
    """Every record of one recording file, checked."""
    data = record.load(path)
    name = data.get("notebook") or Path(path).stem
    return [check_record(r, data["machine"], name) for r in data["records"]]


def replay(directory) -> dict[str, list[Checked]]:
    """Every recording file under ``directory`` (``<stem>.json`` and ``solutions/<stem>.json``), checked:
    notebook name -> its checked records, in notebook order."""
    root = Path(directory)
    if not root.is_dir():
        raise ValueError(f"directory: expected a recording folder, got {root} (not a folder)")
    files = sorted(root.glob("*.json")) + sorted(root.glob("solutions/*.json"))
    return {record.load(f).get("notebook") or f.stem: replay_file(f) for f in files}


def recording_dirs(root) -> list[Path]:
    """``root`` itself when it holds recording files, else its sub-folders that do (e.g. ``recordings/``)."""
    root = Path(root)
    if any(root.glob("*.json")):
        return [root]
    return sorted(d for d in root.iterdir() if d.is_dir() and any(d.glob("*.json")))


def counts(checked: list[Checked]) -> dict:
    """Verdicts (and goal verdicts) concluded / abstained / contradicted / changed now; decisions likewise."""
    v = [c for c in checked if c.kind in ("verdict", "goal")]
    d = [c for c in checked if c.kind == "faster"]
    return {"concluded": sum(c.concluded for c in v), "abstained": sum(not c.concluded for c in v),
            "contradicted": sum(bool(c.contradictions) for c in v), "changed": sum(c.changed for c in v),
            "decided": sum(c.concluded for c in d), "undecided": sum(not c.concluded for c in d),
            "decisions_contradicted": sum(bool(c.contradictions) for c in d),
            "concluded_now": sum(c.now is not None and c.now not in ABSTAINED for c in v),
            "abstained_now": sum(c.now is None or c.now in ABSTAINED for c in v),
            "printed": sum(bool(c.printed) for c in checked), "printed_now": sum(bool(c.printed_now) for c in checked),
            "decidable": sum(bool(c.decidable) for c in checked)}


def _short(name: str) -> str:
    return name.replace("notebooks/", "")


def table(runs: dict[str, dict[str, list[Checked]]]) -> str:
    """A markdown table: one row per recording and notebook (worksheets only where they recorded something),
    with totals per recording. "now" is the current code's rendering of the same records; "printed" counts
    records whose printed line (as printed / as the current code prints it) a scanned pattern contradicts."""
    lines = ["| recording | notebook | verdicts concluded / abstained / contradicted | changed now | now concluded / "
             "abstained | printed patterns contradicted (as printed / now) "
             "| decisions yes-no / cannot tell / contradicted |", "|---|---|---|---|---|---|---|"]
    for run, notebooks in runs.items():
        total = dict.fromkeys(counts([]), 0)
        for name, checked in notebooks.items():
            if not checked and name.startswith("solutions/"):
                continue                   # a worksheet that printed no verdict: a row of zeros says nothing
            k = counts(checked)
            total = {key: total[key] + k[key] for key in total}
            lines.append(f"| {run} | {_short(name)} | {k['concluded']} / {k['abstained']} / {k['contradicted']} "
                         f"| {k['changed']} | {k['concluded_now']} / {k['abstained_now']} | {k['printed']} / "
                         f"{k['printed_now']} | {k['decided']} / {k['undecided']} / {k['decisions_contradicted']} |")
        n = total["concluded"] + total["abstained"]
        share = f" ({total['concluded'] / n:.0%} concluded)" if n else ""
        share_now = f" ({total['concluded_now'] / n:.0%})" if n else ""
        lines.append(f"| {run} | **all** | **{total['concluded']} / {total['abstained']} / {total['contradicted']}**"
                     f"{share} | {total['changed']} | **{total['concluded_now']} / {total['abstained_now']}**"
                     f"{share_now} | {total['printed']} / {total['printed_now']} | {total['decided']} / "
                     f"{total['undecided']} / {total['decisions_contradicted']} |")
    return "\n".join(lines)


def _versions(machine: dict) -> str:
    """The recorded versions (``machine_facts()["versions"]``) in words; older recordings have none."""
    return ", ".join(f"{k} {v}" for k, v in (machine.get("versions") or {}).items()) or "not recorded"


def machines(folders: list[Path]) -> str:
    """A markdown table of the recordings' machines: CPU, lanes, caches, cores, threads, load, budget, date, commit,
    versions."""
    lines = ["| recording | CPU | float32 lanes | caches | cores (affinity) | numba / BLAS threads | load at start "
             "(1 min) | budget | date | commit | versions |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for folder in folders:
        facts = [record.load(f)["machine"] for f in sorted(folder.glob("*.json")) + sorted(folder.glob("solutions/*.json"))]
        m = facts[0]
        loads = [f["loadavg_at_start"][0] for f in facts if f.get("loadavg_at_start")]
        load = f"{min(loads):.1f}-{max(loads):.1f}" if loads else m.get("load_note", "not recorded")
        caches = ", ".join(f"{k} {v >> 10} KiB" for k, v in (m.get("caches") or {}).items())
        dates = sorted(f["date"][:16] for f in facts if f.get("date"))
        when = f"{dates[0]} .. {dates[-1][11:]}" if dates else "not recorded"
        lines.append(f"| {folder.name} | {m.get('cpu')} | {m.get('lanes_float32')} | {caches} | {m.get('cores')} "
                     f"({m.get('affinity')}) | {m.get('numba_threads')} / {m.get('blas_threads')} | {load} | "
                     f"{', '.join(sorted({str(f.get('budget')) for f in facts}))} | {when} | "
                     f"{', '.join(sorted({str(f.get('commit')) for f in facts}))} | {_versions(m)} |")
    return "\n".join(lines)


def disagreements(run: dict[str, list[Checked]], reference: dict[str, list[Checked]]) -> list[str]:
    """Concluded verdicts of ``run`` whose outcome differs from the concluded outcome of the same claim
    (same notebook, same occurrence) in ``reference`` (e.g. the quiet run)."""
    out = []
    for name, checked in run.items():
        seen: dict[str, int] = {}
        ref: dict[tuple[str, int], Checked] = {}
        for c in reference.get(name, []):
            if c.kind in ("verdict", "goal"):
                ref[(c.label, sum(k == c.label for k, _ in ref))] = c
        for c in checked:
            if c.kind not in ("verdict", "goal"):
                continue
            i = seen[c.label] = seen.get(c.label, -1) + 1
            other = ref.get((c.label, i))
            if other is not None and c.concluded and other.concluded and not compatible(c.recorded, other.recorded):
                out.append(f"{_short(name)} cell {c.cell}: {c.label} concluded '{c.recorded}', "
                           f"the reference run '{other.recorded}'")
    return out


def report(checked_by_notebook: dict[str, list[Checked]], historical: bool = False) -> list[str]:
    """One line per contradiction, changed outcome or note. ``historical``: the recording was reconstructed
    from lines older code printed; their contradictions are listed as "OLD CODE" (the current code's, if any,
    still as CONTRADICTION)."""
    out = []
    for name, checked in checked_by_notebook.items():
        for c in checked:
            where = f"{_short(name)} cell {c.cell} {c.kind} {c.label}"
            for x in c.contradictions:     # a printed line's contradiction the current code repeats is current
                old = historical and not x.startswith("now: ") and x not in c.now_contradictions
                out.append(f"{'OLD CODE     ' if old else 'CONTRADICTION'} {where}: {x}")
            if c.suspect:
                out.append(f"SUSPECT       {where}: {c.suspect}")
            for x in c.printed_now:
                out.append(f"PRINTED NOW   {where}: {x}")
            for x in c.printed:
                if x not in c.printed_now:
                    out.append(f"PRINTED (old) {where}: {x}")
            if c.decidable:
                out.append(f"DECIDABLE     {where}: {c.decidable}")
            if c.changed:
                out.append(f"changed       {where}: recorded '{c.recorded}', now '{c.now}'" +
                           (f" ({c.note})" if c.note else ""))
            elif c.note:
                out.append(f"note          {where}: {c.note}")
    return out


def main(dirs: list[str], against: str | None = None) -> int:
    """The ``replay`` command: the table, then the details; 1 when anything is contradicted."""
    runs, historical = {}, set()
    for d in dirs:
        for folder in recording_dirs(d):
            runs[folder.name] = replay(folder)
            if record.load(next(folder.glob("*.json")))["machine"].get("reconstructed"):
                historical.add(folder.name)
    if not runs:
        print(f"no recordings found in {', '.join(dirs)}")
        return 2
    print(machines([folder for d in dirs for folder in recording_dirs(d)]) + "\n")
    print(table(runs))
    for run, checked in runs.items():
        print(f"\n{run}: " + busy_goal.summary(checked))
    bad = 0
    for run, checked in runs.items():
        lines = report(checked, historical=run in historical)
        bad += sum(x.startswith(("CONTRADICTION", "PRINTED NOW", "DECIDABLE")) for x in lines)
        if lines:
            print(f"\n{run}:")
            print("\n".join(lines))
    if against is not None:
        reference = replay(against)
        for run, checked in runs.items():
            diff = disagreements(checked, reference)
            print(f"\n{run} against {Path(against).name}: " + (f"{len(diff)} concluded verdict(s) differ"
                                                                 if diff else "no concluded verdict differs"))
            if diff:
                print("\n".join(diff))
    return 1 if bad else 0
