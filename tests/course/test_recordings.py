"""Recorded runs (COURSE_RECORD) replayed with the current code: no verdict may contradict its own numbers
or its machine, on any machine the course was recorded on; and record mode does nothing when it is off."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from course_lib.__main__ import main as cli
from course_lib.core import intervals
from course_lib.teaching import record, replay
from course_lib.teaching.claims import seed004
from course_lib.teaching.verdict import verdict

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = ROOT / "recordings"
RUNS = replay.recording_dirs(RECORDINGS) if RECORDINGS.is_dir() else []
FILES = [f for d in RUNS for f in sorted(d.glob("*.json")) + sorted(d.glob("solutions/*.json"))]
MACHINE = {"cores": 2, "numba_threads": 2, "lanes_float32": 8, "caches": {"L1d": 32 << 10, "L2": 512 << 10}}
CLAIM = "000.halide.summary.speedup"   # seed 000's 39x


def _verdict_record(**changes) -> dict:
    """A consistent record of seed 000's 39x against ours = 30x (agrees within 1.5x), then ``changes``."""
    r = {"kind": "verdict", "claim": CLAIM, "seed_value": 39.0, "ours": 30.0, "here": "2 cores", "pivot": 1.0,
         "within": 1.5, "unit": None, "interval": None, "noise": None, "reasons": [[False, "2 cores here, not 61"]],
         "cell": 3}
    r.update(changes)
    line = verdict(r["claim"], r["ours"], here=r["here"], pivot=r["pivot"], within=r["within"],
                   reasons=[(bool(c), t) for c, t in r["reasons"]], interval=r["interval"])
    r.setdefault("line", str(line))
    r.setdefault("outcome", line.outcome)
    r.setdefault("reason", line.reason)
    return r


def _write(folder: Path, records: list[dict], machine=MACHINE, name="notebooks/99_planted") -> Path:
    path = record.record_path(folder, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"notebook": name, "machine": machine, "records": records}))
    return path


# --------------------------------------------------------------------------- the committed recordings
def test_there_are_recordings_from_two_kinds_of_machine():
    assert len(RUNS) >= 2, f"expected recordings from at least two runs in {RECORDINGS}, found {RUNS}"
    assert any("avx512" in d.name for d in RUNS) and any("avx2" in d.name for d in RUNS)


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.stem}" for p in FILES])
def test_no_recorded_verdict_contradicts_its_numbers_or_machine(path):
    """Every line as printed and as the current code prints it. A recording reconstructed from the printed
    output of older code is held to the current code's rendering only (its printed lines are history)."""
    checked = replay.replay_file(path)
    old = record.load(path)["machine"].get("reconstructed", False)
    bad = [f"cell {c.cell} {c.kind} {c.label}: {x}" for c in checked
           for x in (c.now_contradictions if old else c.contradictions)]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.stem}" for p in FILES])
def test_recordings_name_their_machine(path):
    machine = record.load(path)["machine"]
    assert machine.get("cpu") and machine.get("cores") and machine.get("lanes_float32")


# --------------------------------------------------------------------------- the checks can fail
@pytest.mark.parametrize("changes, expected", [
    ({"outcome": "agrees", "ours": 4.0, "line": "Seed ... Here (2 cores): 4×.  Agrees: same direction."},
     "beyond 1.5x"),
    ({"ours": 0.5, "outcome": "smaller"}, "opposite sides"),
    ({"outcome": "opposite"}, "same side"),
    ({"pivot": None, "line": "Seed ... Here (2 cores): 30×.  Agrees: same direction, 0.77× the seed's value."},
     "direction without a pivot"),
    ({"interval": [20.0, 60.0], "noise": {"ok": False, "reasons": ["busy"], "notes": ["busy"]},
      "outcome": "agrees"}, "allows"),
    ({"reasons": [[False, "2 cores here, not 61"]],
      "line": "Seed ... Here (2 cores): 30×.  Agrees: same direction, although 2 cores here, not 61."},
     "whose condition was False"),
    ({"here": "16 SIMD lanes"}, "8 float32 lanes"),
    ({"reasons": [[True, "the 1024 KiB L2 holds the matrix"]]}, "L2 is 512 KiB"),
    ({"reasons": [[True, "B (576 KiB) fits in L2"]]}, "L2 is 512 KiB"),
    ({"here": "4 cores"}, "the machine has 2"),
    ({"outcome": "none", "ours": 1.5}, "not within 1.25x of the pivot"),
    ({"outcome": "none", "ours": 1.0, "interval": [0.9, 1.4]}, "not within 1.25x of the pivot"),
])
def test_a_planted_contradiction_is_caught(changes, expected):
    r = _verdict_record(**changes)
    c = replay.check_record(r, MACHINE, "notebooks/99_planted")
    assert any(expected in x for x in c.contradictions), c.contradictions


def test_a_consistent_record_passes_and_replays_the_same():
    c = replay.check_record(_verdict_record(), MACHINE)
    assert c.contradictions == [] and c.recorded == c.now == "agrees" and c.concluded
    none = replay.check_record(_verdict_record(ours=0.99, interval=[0.975, 1.02]), MACHINE)   # no clear effect
    assert none.contradictions == [] and none.recorded == none.now == "none" and none.concluded


def test_a_planted_decision_contradiction_is_caught():
    values = [0.5, 0.52, 0.49, 0.51, 0.5, 0.5, 0.48]          # name about 2x faster in every pair
    r = {"kind": "faster", "name": "b", "over": "a", "by": 3.0, "answer": "yes", "values": values,
         "speedup_interval": list(intervals.Ratio("b", "a", values).speedup_interval)}
    c = replay.check_record(r, MACHINE)
    assert c.now == "no" and c.changed and "answered 'yes'" in c.contradictions[0]


def test_a_decision_judged_by_its_fastest_rounds_replays_the_same():
    # chunked slower than sequential in every pair (a loaded machine), but judged by the two floors: 0.83x..1.12x
    values = [1.04, 1.09, 1.02, 1.03, 1.05, 1.05, 1.09, 1.02, 1.05]
    base = {"kind": "faster", "name": "chunked", "over": "sequential", "by": 1.05, "answer": "cannot tell",
            "values": values, "median": 0.97, "speedup_interval": [0.83, 1.12], "biased": False}
    assert intervals.Ratio("chunked", "sequential", values).faster(1.05) == "no"     # what the pairs alone say
    for r in ({**base, "floor": [0.97, 1 / 1.12, 1 / 0.83]}, base):                  # recorded floor; older record
        c = replay.check_record(r, MACHINE)
        assert c.now == "cannot tell" and not c.changed and c.contradictions == []
    pairs = {**base, "speedup_interval": list(intervals.Ratio("c", "s", values).speedup_interval), "answer": "no"}
    assert replay.check_record(pairs, MACHINE).now == "no"                           # no floor: the pairs decide


def test_a_goal_said_to_hold_that_did_not_is_caught():
    line = seed004.goal_verdict("004.goal.openmp", holds=True, ours="2x", here="2 cores")
    r = {"kind": "goal", "goal": "004.goal.openmp", "holds": False, "ours": "2x", "here": "2 cores", "reasons": [],
         "noise": None, "line": str(line), "outcome": line.outcome, "reason": ""}
    assert "'holds' was False" in replay.check_record(r, MACHINE).contradictions[0]


def test_machine_slips_leave_the_seeds_facts_alone():
    text = "2 cores here, not 61 cores; the seed's 16 lanes; not 16 lanes; the loop's state (12 KB) fits in L2"
    assert replay.machine_slips(text, MACHINE) == []
    assert replay.machine_slips("fits this CPU's 1024 KB L2 cache", MACHINE)


def test_the_replay_command_fails_on_a_planted_contradiction(tmp_path, capsys):
    good = tmp_path / "good"
    _write(good, [_verdict_record()])
    assert cli(["replay", str(good)]) == 0
    assert "| good | 99_planted | 1 / 0 / 0 |" in capsys.readouterr().out
    bad = tmp_path / "bad"
    _write(bad, [_verdict_record(here="16 lanes")])
    assert cli(["replay", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "CONTRADICTION" in out and "| bad | 99_planted | 1 / 0 / 1 |" in out
    # a folder of recordings is replayed folder by folder, and --against lists differing conclusions
    assert cli(["replay", str(tmp_path), "--against", str(good)]) == 1


def test_disagreement_with_the_reference_run_is_listed(tmp_path):
    _write(tmp_path / "quiet", [_verdict_record()])
    _write(tmp_path / "busy", [_verdict_record(ours=8.0)])
    diff = replay.disagreements(replay.replay(tmp_path / "busy"), replay.replay(tmp_path / "quiet"))
    assert len(diff) == 1 and "'smaller'" in diff[0] and "'agrees'" in diff[0]


def test_replay_refuses_a_file_that_is_not_a_recording(tmp_path):
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(ValueError, match="path"):
        replay.replay_file(tmp_path / "x.json")


# --------------------------------------------------------------------------- record mode on and off
@pytest.fixture
def recording(tmp_path, monkeypatch):
    monkeypatch.setenv(record.ENV_DIR, str(tmp_path))
    monkeypatch.setenv(record.ENV_NOTEBOOK, "notebooks/99_test")
    monkeypatch.setattr(record, "_STARTED", set())
    monkeypatch.setattr(intervals, "DECISION_HOOKS", [])
    assert record.start()
    return tmp_path


def test_record_mode_writes_what_replay_needs(recording):
    from course_lib.core import backend

    here = f"{backend.cpu_count()} cores"     # the recorded machine's own count (one core under taskset -c 0)
    v = verdict(CLAIM, 30.0, here=here, reasons=[(False, "no"), (True, "yes, this one")])
    g = seed004.goal_verdict("004.goal.openmp", holds=False, ours="0.9x", reasons=[(True, "the workers share one batch")])
    answer = intervals.Ratio("b", "a", [0.5, 0.52, 0.49, 0.51, 0.5, 0.5]).faster(1.5)
    data = record.load(recording / "99_test.json")
    assert data["notebook"] == "notebooks/99_test"
    assert {"cpu", "lanes_float32", "caches", "cores", "affinity", "numba_threads", "blas_threads",
            "loadavg_at_start", "budget", "date", "commit"} <= set(data["machine"])
    kinds = [r["kind"] for r in data["records"]]
    assert kinds == ["verdict", "goal", "faster"]
    rv, rg, rf = data["records"]
    assert rv["line"] == str(v) and rv["reasons"] == [[False, "no"], [True, "yes, this one"]]
    assert rg["outcome"] == g.outcome == "opposite" and rf["answer"] == answer == "yes"
    checked = replay.replay_file(recording / "99_test.json")
    assert [c.changed for c in checked] == [False] * 3 and not any(c.contradictions for c in checked)


def test_a_new_run_starts_the_file_afresh(recording, monkeypatch):
    verdict(CLAIM, 30.0)
    monkeypatch.setattr(record, "_STARTED", set())     # a new kernel
    verdict(CLAIM, 31.0)
    assert [r["ours"] for r in record.load(recording / "99_test.json")["records"]] == [31.0]


def test_the_runner_maps_records_to_cells(recording):
    import nbformat

    verdict(CLAIM, 30.0)
    path = recording / "99_test.json"
    data = record.load(path)
    data["records"][0]["execution_count"] = 2
    path.write_text(json.dumps(data))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("x"), nbformat.v4.new_code_cell("a"),
                                         nbformat.v4.new_code_cell("b")])
    nb.cells[1].execution_count, nb.cells[2].execution_count = 1, 2
    record.attach_cells(nb, "notebooks/99_test")
    assert record.load(path)["records"][0]["cell"] == 2


def test_solutions_go_in_their_own_folder(tmp_path):
    assert record.record_path(tmp_path, "solutions/05_x") == tmp_path / "solutions" / "05_x.json"
    assert record.record_path(tmp_path, "notebooks/05_x") == tmp_path / "05_x.json"


def test_record_mode_is_inert_when_off(tmp_path, monkeypatch):
    monkeypatch.delenv(record.ENV_DIR, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(intervals, "DECISION_HOOKS", [])
    assert record.start() is False and intervals.DECISION_HOOKS == []
    verdict(CLAIM, 30.0)
    intervals.Ratio("b", "a", [0.5] * 6).faster(1.5)
    record.verdict_made("verdict", {}, verdict(CLAIM, 30.0))
    assert list(tmp_path.iterdir()) == []


def test_a_fresh_process_without_course_record_registers_nothing(tmp_path):
    code = ("import course_lib.teaching.verdict as v, course_lib.teaching.record as r\n"
            "from course_lib.core import intervals\n"
            "v.verdict('000.halide.summary.speedup', 30.0)\n"
            "print(len(intervals.DECISION_HOOKS), intervals.Ratio('b', 'a', [0.5] * 6).faster(1.5))\n")
    env = {k: v for k, v in os.environ.items() if k != record.ENV_DIR}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "yes"] and list(tmp_path.iterdir()) == []


def test_the_notebooks_runner_records_a_kernels_verdicts_with_their_cells(tmp_path, monkeypatch):
    from course_lib.teaching import authoring

    folder = tmp_path / "notebooks"
    folder.mkdir()
    py = folder / "99_probe.py"
    py.write_text("# %% [markdown]\n# a probe\n\n# %%\nx = 1\n\n# %%\n"
                  "from course_lib.teaching.verdict import verdict\n"
                  f"print(verdict({CLAIM!r}, 30.0, here='a probe'))\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(record.ENV_DIR, "rec")                 # relative: the runner makes it absolute
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    authoring.sync_notebook(py, py.with_suffix(".ipynb"), execute=True, timeout=300)
    data = record.load(tmp_path / "rec" / "99_probe.json")
    assert data["notebook"] == "notebooks/99_probe"
    (r,) = data["records"]
    assert r["cell"] == 2 and r["here"] == "a probe" and r["outcome"] == "agrees"
    # run again without the verdict: the earlier run's record (and its machine and commit) must not stay behind
    py.write_text("# %% [markdown]\n# a probe\n\n# %%\nx = 1\n")
    authoring.sync_notebook(py, py.with_suffix(".ipynb"), execute=True, timeout=300)
    again = record.load(tmp_path / "rec" / "99_probe.json")
    assert again["records"] == [] and again["machine"]["date"] >= data["machine"]["date"]


def test_a_notebook_that_recorded_nothing_still_gets_a_file(recording):
    import nbformat

    record.attach_cells(nbformat.v4.new_notebook(), "solutions/98_quiet")
    data = record.load(recording / "solutions" / "98_quiet.json")
    assert data["records"] == [] and data["machine"]["cores"] >= 1
    assert replay.counts(replay.replay_file(recording / "solutions" / "98_quiet.json"))["concluded"] == 0


def test_the_machines_table_names_each_run(tmp_path):
    _write(tmp_path / "a-run", [_verdict_record()], machine={**MACHINE, "cpu": "Some CPU", "loadavg_at_start": [3.5, 1, 1],
                                                             "budget": "small", "commit": "abc"})
    text = replay.machines([tmp_path / "a-run"])
    assert "| a-run | Some CPU | 8 | L1d 32 KiB, L2 512 KiB | 2 " in text and "| 3.5-3.5 | small |" in text


def test_a_reconstructed_recording_fails_only_on_the_current_codes_contradictions(tmp_path, capsys):
    old_line = ("Seed ... Here (2 cores): 30×.  Agrees: same direction, 0.77× the seed's value (within 1.5×).")
    _write(tmp_path / "old-run", [_verdict_record(pivot=None, line=old_line)],
           machine={**MACHINE, "reconstructed": True})
    assert cli(["replay", str(tmp_path / "old-run")]) == 0
    assert "OLD CODE" in capsys.readouterr().out
    _write(tmp_path / "old-run", [_verdict_record(here="16 lanes")], machine={**MACHINE, "reconstructed": True})
    assert cli(["replay", str(tmp_path / "old-run")]) == 1


def test_a_conclusion_from_pairs_the_guard_called_biased_is_flagged_suspect():
    why = "the functions' threads waited for a core unequally (...): which pairs cannot cancel"
    r = _verdict_record(noise={"ok": False, "reasons": [why], "uncertain": [why]}, interval=[30.0, 33.0])
    c = replay.check_record(r, MACHINE)
    assert c.concluded and "cannot cancel" in c.suspect and c.contradictions == []
    assert any(x.startswith("SUSPECT") for x in replay.report({"notebooks/99": [c]}))


# --------------------------------------------------------------------------- printed patterns (issue 43)
@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.stem}" for p in FILES])
def test_no_printed_pattern_contradicts_its_numbers_and_no_abstention_is_decidable(path):
    """Every line as the current code prints it from the recorded numbers: no printed pattern ("is faster" within
    the no-difference band, a stated factor, "every value between", a speed-up goal said to hold at no clear
    speed-up) that those numbers contradict, and no abstention that every value its recorded noise allows decides.
    (Lines printed by older code are history: held to the current rendering, as for reconstructed recordings.)"""
    checked = replay.replay_file(path)
    bad = [f"cell {c.cell} {c.kind} {c.label}: {x}" for c in checked for x in c.printed_now]
    bad += [f"cell {c.cell} {c.kind} {c.label}: {c.decidable}" for c in checked if c.decidable]
    assert not bad, "\n".join(bad)


def test_the_intel_quiet_run_concludes_what_its_noise_decides():
    """The reader of the Intel quiet run judged 05's section 4.10 share (4.3% spread by 32% against a 15% edge) and
    10's MPI ratio (0.207x spread by 38%) decidable: re-rendered, both conclude. Every other change is an
    abstention near the edge of two size bands on the seed's side that now concludes the direction alone."""
    quiet = RECORDINGS / "xeon-avx512-quiet"
    runs = replay.replay(quiet)
    changed = {(name, c.cell, c.label): (c.recorded, c.now) for name, cs in runs.items() for c in cs if c.changed}
    assert changed.pop(("notebooks/05_threads_fusion", 17, "000.ch05.s410.saving")) == ("unreliable", "smaller")
    assert changed.pop(("notebooks/10_mgrit", 29, "002.speedup.max")) == ("unreliable", "opposite")
    assert changed and set(changed.values()) == {("unreliable", "direction")}, changed
    total = {k: sum(replay.counts(cs)[k] for cs in runs.values()) for k in ("concluded_now", "abstained_now")}
    assert total == {"concluded_now": 24 + len(changed), "abstained_now": 10 - len(changed)}


@pytest.mark.parametrize("record, expected", [
    ({"kind": "said", "speeds": {"threads": 1.34, "MPI": 1.38}, "band": 1.05, "line": "MPI is faster (1.03x)"},
     "no clear difference"),
    ({"kind": "said", "speeds": {"threads": 1.58, "MPI": 1.0}, "band": 1.05, "line": "MPI is faster (1.58x)"},
     "names a faster one"),
    ({"kind": "said", "speeds": {"threads": 1.58, "MPI": 1.0}, "band": 1.05,
      "line": "no clear difference (1.58x, under 5%)"}, "differ by"),
    ({"kind": "goal", "goal": "004.goal.mpi", "holds": True, "ours": "MPI with 2 ranks: 1.03x the batched pass",
      "outcome": "agrees", "line": "Seed 004, §7.2 (a), hoped for: “Achieve speedup through MPI”.  Here (2 cores): "
                                   "MPI with 2 ranks: 1.03x the batched pass.  Holds here."}, "speed-up goal holds"),
])
def test_a_planted_printed_pattern_is_caught(record, expected):
    from course_lib.teaching import printed

    assert any(expected in x for x in printed.scan(record)), printed.scan(record)


def test_planted_verdict_patterns_are_caught():
    from course_lib.teaching import printed

    r = _verdict_record(ours=7.8)                       # 39 / 7.8 = 5x smaller
    assert printed.scan(r) == [] and "5× smaller" in r["line"]
    wrong = {**r, "line": r["line"].replace("5× smaller", "3× smaller")}
    assert any("ours is 0.2x" in x for x in printed.scan(wrong))
    every = {**r, "outcome": "smaller", "line": "... (an unreliable run -- x -- but every value between 7× and 30× "
                                                "gives this verdict)."}
    assert any("gives 'smaller'" in x for x in printed.scan(every))
    allows = {**r, "outcome": "unreliable", "line": "No verdict: ours lies between 7× and 30×, which allows "
                                                    "'agrees' (at 7×) and 'agrees' (at 30×) -- the difference"}
    assert any("says 7× gives 'agrees'" in x for x in printed.scan(allows))


def test_a_core_count_reason_for_a_one_core_measurement_is_a_contradiction():
    r = _verdict_record(ours=1.8, reasons=[[True, "2 cores here, not 61"]], cores_used=1, outcome="smaller",
                        reason="2 cores here, not 61",
                        line="Seed ... Here (2 cores): 1.8×.  Same direction, 22× smaller here -- 2 cores here, not 61.")
    c = replay.check_record(r, MACHINE)
    assert any("measured on 1 core by a core count" in x for x in c.recorded_contradictions)
    assert c.now_contradictions == [] and "no fact measured here explains" not in c.recorded   # now: no reason chosen


def test_a_one_core_measurement_may_name_its_one_core_on_a_two_core_machine():
    r = _verdict_record(here="1 core (sequential scan, 1 BLAS thread)", cores_used=1)
    assert replay.check_record(r, MACHINE).contradictions == []
    assert replay.check_record({**r, "cores_used": None}, MACHINE).contradictions     # not stated: a slip


def test_the_replay_command_fails_on_a_printed_pattern(tmp_path, capsys):
    said = {"kind": "said", "speeds": {"threads": 1.34, "MPI": 1.38}, "band": 1.0, "line": "MPI is faster (1.03x)"}
    _write(tmp_path / "run", [said])        # band 1.0: the current rendering also says "faster" at 1.03x
    assert cli(["replay", str(tmp_path / "run")]) == 1
    assert "PRINTED NOW" in capsys.readouterr().out


def test_a_computed_comparison_sentence_is_recorded_and_replayed(recording):
    from course_lib.teaching.verdict import which_faster

    said = which_faster({"threads (shared memory)": 1.34, "MPI (messages)": 1.38})
    (r,) = record.load(recording / "99_test.json")["records"]
    assert r["kind"] == "said" and r["line"] == said and r["speeds"] == {"threads (shared memory)": 1.34,
                                                                         "MPI (messages)": 1.38}
    (c,) = replay.replay_file(recording / "99_test.json")
    assert c.kind == "said" and not c.changed and c.printed == c.printed_now == []
