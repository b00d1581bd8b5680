"""Issue 43's busy goal on a planted recording: one-thread and counted lines concluded, threaded lines abstaining
with the held core named, and records that state nothing counted apart (never guessed)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from course_lib.__main__ import main as cli
from course_lib.core.noise import Noise
from course_lib.teaching import busy_goal, record, replay
from course_lib.teaching.claims import seed004
from course_lib.teaching.verdict import COUNTED, verdict

MACHINE = {"cores": 2, "numba_threads": 2, "lanes_float32": 8, "caches": {"L1d": 32 << 10, "L2": 512 << 10}}
CLAIM = "000.halide.summary.speedup"   # seed 000's 39x
LOADED = Noise(others=1.0, busy=True)  # one busy process held a core meanwhile


def _record(ours: float, cores_used, noise: Noise | None = None, interval=None, cell: int = 1) -> dict:
    line = verdict(CLAIM, ours, here="2 cores", noise=noise, interval=interval, cores_used=cores_used)
    return {"kind": "verdict", "claim": CLAIM, "seed_value": 39.0, "ours": ours, "here": "2 cores", "pivot": 1.0,
            "within": 1.5, "unit": None, "interval": interval, "noise": record.noise_summary(noise), "reasons": [],
            "cores_used": cores_used, "cell": cell, "line": str(line), "outcome": line.outcome,
            "reason": line.reason}


def _planted(folder):
    folder.mkdir()
    records = [_record(30.0, 1, cell=1),                                     # one thread, concluded
               _record(30.0, 1, noise=LOADED, interval=(0.8, 60.0), cell=2),   # one thread, abstained
               _record(30.0, COUNTED, cell=3),                                # counted, concluded
               _record(1.2, 2, noise=LOADED, cell=4),                         # threads, abstained naming the load
               _record(30.0, 2, cell=5),                                      # threads, concluded
               _record(30.0, None, cell=6)]                                   # not stated
    assert [r["outcome"] for r in records] == ["agrees", "unreliable", "agrees", "unreliable", "agrees", "agrees"]
    (folder / "99_planted.json").write_text(json.dumps({"notebook": "notebooks/99_planted", "machine": MACHINE,
                                                         "records": records}))
    return folder


def test_the_tally_sorts_lines_by_what_they_ran_on(tmp_path):
    t = busy_goal.tally(replay.replay(_planted(tmp_path / "busy")))
    assert (t["single"], t["single_concluded"], t["threaded"], t["threaded_held"], t["not_stated"]) == (3, 2, 2, 1, 1)
    (nb, cell, label, reason), = t["single_open"]
    assert (nb, cell, label) == ("notebooks/99_planted", 2, CLAIM) and "core(s) busy" in reason
    assert [x[1] for x in t["threaded_other"]] == [5]


def test_the_replay_command_prints_the_busy_goal_line(tmp_path, capsys):
    assert cli(["replay", str(_planted(tmp_path / "busy"))]) == 0
    out = capsys.readouterr().out
    assert ("busy: one-thread and counted lines: 2 of 3 concluded (67%) (goal >= 90% under one busy process per 2 "
            "cores); threaded/rank lines: 1 of 2 abstained naming the held core; not stated: 1") in out
    assert "    open: 99_planted cell 2 000.halide.summary.speedup: other processes kept up to 1.0 core(s)" in out
    assert "    threaded, concluded: 99_planted cell 5 000.halide.summary.speedup ('agrees')" in out


def test_a_goal_verdict_records_what_it_ran_on(tmp_path, monkeypatch):
    monkeypatch.setenv(record.ENV_DIR, str(tmp_path))
    monkeypatch.setenv(record.ENV_NOTEBOOK, "notebooks/99_goal")
    monkeypatch.setattr(record, "_STARTED", set())
    seed004.goal_verdict("004.goal.openmp", holds=True, ours="1.5x", noise=LOADED, cores_used=2)
    r, = record.load(tmp_path / "99_goal.json")["records"]
    assert r["cores_used"] == 2 and r["outcome"] == "unreliable"
    assert busy_goal.names_held_core(r["line"]) and busy_goal.kind(r["cores_used"]) == "threaded"
    with pytest.raises(ValueError, match="cores_used"):
        seed004.goal_verdict("004.goal.openmp", holds=True, ours="1.5x", cores_used=-2)


def test_kinds_and_held_core_wording():
    assert [busy_goal.kind(x) for x in (None, 0, 1, 4)] == ["not stated", "counted", "one-thread", "threaded"]
    with pytest.raises(ValueError, match="cores_used"):
        busy_goal.kind(-1)
    assert busy_goal.names_held_core("threaded code ran while other processes held a core (threads: a 1, b 2)")
    assert not busy_goal.names_held_core("repeats spread by up to 39% of the median")


# --------------------------------------------------------------------------- every call site states it
ROOT = Path(__file__).resolve().parents[2]
NOT_STATED_YET = {
    "notebooks/07_parallel_inference.py:004.goal.cuda": "a GPU run: no CPU core count describes it",
}


def _calls(source: str):
    """``(line, text)`` of every ``verdict(`` / ``goal_verdict(`` call in a notebook source."""
    for m in re.finditer(r"\b(?:verdict|goal_verdict)\(", source):
        i, depth = m.end(), 1
        while depth:
            depth += {"(": 1, ")": -1}.get(source[i], 0)
            i += 1
        yield source[:m.start()].count("\n") + 1, source[m.start():i]


def test_every_verdict_call_states_what_it_ran_on():
    """Issue 43: a notebook's verdict and goal lines say what the judged quantity ran on (cores_used), from the
    run's facts, so that the busy goal can be counted; the replay never guesses it."""
    missing = []
    for path in sorted((ROOT / "notebooks").glob("*.py")) + sorted((ROOT / "solutions").glob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for line, call in _calls(path.read_text(encoding="utf-8")):
            claim = re.search(r"\(\s*\"([\w.]+)\"", call)
            if "cores_used" in call or rel in NOT_STATED_YET or f"{rel}:{claim and claim.group(1)}" in NOT_STATED_YET:
                continue
            missing.append(f"{rel}:{line}")
    assert not missing, f"verdict calls without cores_used: {missing}"


def test_the_recorded_clock_survives_the_replay():
    """A line judged on CPU-clocked times under load keeps the quiet margin when replayed (the recording says
    ``cpu_clock``); an older recording without it is replayed with the loaded margin, as it was printed."""
    cpu = Noise(others=1.0, cpu_clock=True)
    summary = record.noise_summary(cpu)
    assert summary["cpu_clock"] is True and replay._noise(summary).cpu_clock
    del summary["cpu_clock"]
    assert replay._noise(summary).cpu_clock is False
