"""The worksheet-12 checks accept the reference solutions (the worksheet's own, read from solutions/) and
reject wrong ones with a precise message: hard-coded answers, predictions that are not the model's first
choice, modelling slips (named), methods that cannot apply, methods outside the candidates, non-strings and
unknown names. The graded part runs on preset machines only: deterministic, no measurement. The
explanation of a disagreeing measurement is computed (tested on synthetic timings, deterministic)."""
import ast
import dataclasses
from pathlib import Path

import pytest

from course_lib.core import timing
from course_lib.experiments import cost_model as cm
from course_lib.teaching.checks import which
from course_lib.teaching.checks.core import ExerciseFailed

CANDIDATES = {k: list(s.candidates) for k, s in which.PROBLEMS.items()}


@pytest.fixture(scope="module", params=["measured", "k80_host"])
def machine(request):
    """The live machine of the (ungraded) report: this machine measured, or a fixed preset host. The
    graded part never uses it."""
    if request.param == "measured":
        return cm.Machine.measure(quick=True)
    return cm.Machine.preset("k80_host").with_gpu(None)


def predict_a(batch, T, nh, layers, machine):
    problem = cm.Problem("rnn", "inference", batch=batch, T=T, nh=nh, layers=layers, ny=nh)
    return cm.advise(problem, machine, methods=["batched", "threads", "wavefront"])[0].method


def predict_b(T, nh, machine):
    problem = cm.Problem("linear", "inference", batch=1, T=T, nh=nh)
    seconds = {m: cm.predict(m, problem, machine).seconds for m in ("sequential", "channels", "chunked")}
    return min(seconds, key=seconds.get)


def predict_c(batch, T, nh, machine):
    problem = cm.Problem("gru", "training", batch=batch, T=T, nh=nh)
    return cm.advise(problem, machine, methods=["batched", "mgrit", "newton", "quasi"])[0].method


SOLUTIONS = {"12.1": predict_a, "12.2": predict_b, "12.3": predict_c}
CHECKS = {"12.1": which.check_predict_a, "12.2": which.check_predict_b, "12.3": which.check_predict_c}


def _returning(value):
    def fn(**kwargs):
        return value(kwargs) if callable(value) else value
    return fn


def test_reference_solutions_pass(machine, capsys):
    for k, fn in SOLUTIONS.items():
        line = CHECKS[k](fn, machine, measure=False)
        assert line == f"Exercise {k} passed: 4/4 cases"
    out = capsys.readouterr().out
    assert all(f"Exercise {k} passed: 4/4 cases" in out for k in SOLUTIONS)


def test_pass_measures_and_reports(machine, capsys):
    which._REPORTS.pop("12.2", None)
    which.report("12.2")
    assert "no measurement yet" in capsys.readouterr().out
    which.check_predict_b(predict_b, machine)
    which.report("12.2")
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "Exercise 12.2 passed: 4/4 cases"  # the stable line carries no measured number
    assert "your prediction" in out and "measured" in out
    assert ("The measurement agrees" in out) or ("The measured fastest is" in out)


@pytest.mark.parametrize("ex", sorted(SOLUTIONS))
def test_hard_coded_answer_is_rejected(machine, ex):
    best = which.model_choice(ex)[0]
    spec = which.PROBLEMS[ex]
    others = [which.model_choice(ex, kw, which._resolve(lbl))[0] for kw, lbl in spec.variants]
    assert any(o != best for o in others)  # presets: the cases' answers differ, on every computer
    with pytest.raises(ExerciseFailed, match=rf"Exercise {ex} failed on a second problem(.|\n)*"
                                             rf"(returned '{best}' again|a hard-coded '{best}')"):
        CHECKS[ex](_returning(lambda kw, m=best: m), machine, measure=False)


@pytest.mark.parametrize("ex", sorted(SOLUTIONS))
def test_prediction_that_is_not_the_models_choice(machine, ex):
    def second(kwargs):
        adv = cm.advise(which.PROBLEMS[ex].problem({k: v for k, v in kwargs.items() if k != "machine"}),
                        kwargs["machine"], methods=CANDIDATES[ex])
        return adv[1].method
    best, secs = which.model_choice(ex)
    with pytest.raises(ExerciseFailed, match=rf"Exercise {ex} failed on problem \(.\) as stated(.|\n)*you predicted "
                                             rf"'\w+', but the model's first choice is '{best}': the model predicts "
                                             rf".* for '{best}' and .* slower\)"):
        CHECKS[ex](_returning(second), machine, measure=False)


@pytest.mark.parametrize("ex", sorted(SOLUTIONS))
@pytest.mark.parametrize("value,msg", [
    (3, r"expected the method's name as a string .* got int 3"),
    (0.0012, r"expected the method's name as a string .* got float"),
    ("fastest", r"'fastest' is not a method of the cost model"),
    ("Threads", r"'Threads' is not a method of the cost model(.|\n)*lower case"),
])
def test_non_strings_and_unknown_names(machine, ex, value, msg):
    with pytest.raises(ExerciseFailed, match=rf"Exercise {ex} failed on problem(.|\n)*{msg}"):
        CHECKS[ex](_returning(value), machine, measure=False)


@pytest.mark.parametrize("ex,method,reason", [
    ("12.1", "chunked", r"'chunked' cannot apply to this problem \(rnn inference.*\): kind: chunked computes linear"),
    ("12.1", "mgrit", r"'mgrit' applies, but it is not one of this problem's candidates"),
    ("12.2", "mgrit", r"'mgrit' cannot apply to this problem \(linear inference.*\): kind: mgrit solves nonlinear"),
    ("12.2", "wavefront", r"'wavefront' cannot apply(.|\n)*layers"),
    ("12.2", "threads", r"'threads' cannot apply(.|\n)*batch: splitting the batch"),
    ("12.3", "chunked", r"'chunked' cannot apply to this problem \(gru training.*\): kind"),
    ("12.3", "sequential", r"'sequential' applies, but it is not one of this problem's candidates"),
    ("12.3", "cuda_batched", r"'cuda_batched' cannot apply(.|\n)*machine: cuda_batched needs a machine with a GPU"),
])
def test_methods_that_cannot_apply_or_are_not_candidates(machine, ex, method, reason):
    with pytest.raises(ExerciseFailed, match=rf"Exercise {ex} failed on problem \(.\) as stated(.|\n)*{reason}"):
        CHECKS[ex](_returning(method), machine, measure=False)


def test_advice_object_and_raising_function(machine):
    def advice(batch, T, nh, layers, machine):
        return cm.advise(cm.Problem("rnn", batch=batch, T=T, nh=nh, layers=layers, ny=nh), machine,
                         methods=CANDIDATES["12.1"])[0]
    with pytest.raises(ExerciseFailed, match=r"12.1 failed(.|\n)*returned an Advice object(.|\n)*\.method"):
        which.check_predict_a(advice, machine, measure=False)

    def forgot_layers(batch, T, nh, layers, machine):  # wavefront needs >= 2 layers: the model refuses
        return cm.advise(cm.Problem("rnn", batch=batch, T=T, nh=nh, ny=nh), machine,
                         methods=CANDIDATES["12.1"])[0].method
    with pytest.raises(ExerciseFailed, match=r"12.1 failed on problem \(a\)(.|\n)*raised ValueError: layers"):
        which.check_predict_a(forgot_layers, machine, measure=False)


@pytest.mark.parametrize("ex", sorted(SOLUTIONS))
def test_ignoring_the_machine_argument_is_named(machine, ex):
    this_machine = which.PRESETS[which.PRIMARY]  # always the stated problem's machine, whatever it is given

    def here_only(machine, **kwargs):
        return SOLUTIONS[ex](**kwargs, machine=this_machine)
    with pytest.raises(ExerciseFailed, match=rf"{ex} failed on a second problem(.|\n)*not on the machine you were "
                                             rf"given(.|\n)*`machine` argument"):
        CHECKS[ex](here_only, machine, measure=False)


def test_unsolved_exercise_lets_not_implemented_through(machine):
    def todo(**kwargs):
        raise NotImplementedError("Exercise 12.1: replace this line with your code")
    with pytest.raises(NotImplementedError):
        which.check_predict_a(todo, machine)
    with pytest.raises(ExerciseFailed, match="expected a function"):
        which.check_predict_a("threads", machine)


# --------------------------------------------------------------------------- the computed explanation
def _fake(ex, medians, predicted, machine, observed=None, noisy=False):
    timings = {m: timing.Timing([t, t, t], 1, timing.Noise()) for m, t in medians.items()}
    noise = timing.Noise().add(noisy, "a test said so")
    cmp = timing.Comparison(timings, next(iter(medians)), noise=noise)
    spec = which.PROBLEMS[ex]
    return which.Measurement(ex, spec.problem(spec.primary), machine, cmp, predicted, observed or {})


def test_explain_agreement_tie_noise_assumptions_and_error(machine):
    quiet = dataclasses.replace(machine, noise=timing.Noise())  # the explanation also reports a busy machine
    pred = {"batched": 3e-3, "threads": 1e-3, "wavefront": 4e-3}
    m = _fake("12.1", {"batched": 3e-3, "threads": 1e-3, "wavefront": 5e-3}, pred, quiet)
    assert which.explain(m, "threads").startswith("The measurement agrees: the model's first choice, threads")
    m = _fake("12.1", {"batched": 1.0e-3, "threads": 1.05e-3, "wavefront": 5e-3}, pred, quiet)
    assert "closer than the model" in which.explain(m, "threads")
    m = _fake("12.1", {"batched": 1e-3, "threads": 5e-3, "wavefront": 5e-3}, pred, quiet, noisy=True)
    assert "no conclusion" in which.explain(m, "threads") and "a test said so" in which.explain(m, "threads")
    m = _fake("12.1", {"batched": 1e-3, "threads": 9e-3, "wavefront": 5e-3}, pred, quiet)
    text = which.explain(m, "threads")
    assert "The measured fastest is batched, not the model's first choice threads" in text
    assert "the model is off by" in text
    # MGRIT took many more iterations than the model assumed: re-predicted with them, the model agrees
    prob = which.PROBLEMS["12.3"].problem(which.PROBLEMS["12.3"].primary)
    obs = {"mgrit": {"P": 1, "iters": 1}, "newton": {"P": 1, "iters": 200}, "quasi": {"P": 1, "iters": 400}}
    redo = {k: cm.predict(k, prob, quiet, **obs.get(k, {})).seconds for k in CANDIDATES["12.3"]}
    fast = min(redo, key=redo.get)
    choice = "newton" if fast != "newton" else "quasi"
    med = {k: (1e-3 if k == fast else 1.0) for k in CANDIDATES["12.3"]}
    m = _fake("12.3", med, {k: 1.0 for k in med}, quiet, observed=obs)
    text = which.explain(m, choice)
    assert "took 200 iterations (the model assumed 6)" in text and f"the model picks {fast} too" in text


def test_report_and_measure_reject_unknown_exercises():
    with pytest.raises(ValueError, match="exercise"):
        which.report("12.9")
    with pytest.raises(ValueError, match="exercise"):
        which.measure_candidates("7.1")


# --------------------------------------------------------------------------- modelling slips, determinism
def _ranked(kind, mode, candidates):
    def fn(batch, T, nh, machine):
        return cm.advise(cm.Problem(kind, mode, batch=batch, T=T, nh=nh), machine, methods=candidates)[0].method
    return fn


@pytest.mark.parametrize("slip,fn", [
    ("training priced as inference", _ranked("gru", "inference", CANDIDATES["12.3"])),
    ("a GRU priced as an LSTM", _ranked("lstm", "training", CANDIDATES["12.3"])),
    ("a quasi-DEER win ignored", _ranked("gru", "training", ["batched", "mgrit", "newton"])),
])
def test_modelling_slips_are_rejected_by_name(slip, fn):
    with pytest.raises(ExerciseFailed, match=rf"Exercise 12.3 failed on a second problem(.|\n)*a modelling slip: "
                                             rf"{slip}"):
        which.check_predict_c(fn, measure=False)


def test_each_slip_changes_an_answer_on_the_presets():
    spec = which.PROBLEMS["12.3"]
    cases = [(spec.primary, which.PRIMARY)] + list(spec.variants)
    right = [which.model_choice("12.3", kw, which.PRESETS[lbl])[0] for kw, lbl in cases]
    assert "quasi" in right  # a case where quasi-DEER is the model's answer
    for name, answers in which._slip_answers(spec, cases).items():
        assert answers != right, name


def _worksheet_solutions() -> dict:
    """The worksheet's own solution functions, from solutions/12_which_parallelism.py."""
    path = Path(__file__).resolve().parents[3] / "solutions" / "12_which_parallelism.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("predict_")]
    ns = {"cost_model_exp": cm}
    exec(compile(ast.Module(body=defs, type_ignores=[]), str(path), "exec"), ns)
    return {n.name: ns[n.name] for n in defs}


def test_the_worksheets_solution_passes_deterministically(monkeypatch, capsys):
    sols = _worksheet_solutions()
    assert set(sols) == {"predict_a", "predict_b", "predict_c"}

    def no_measuring(*a, **k):
        raise AssertionError("the graded part measured the machine")
    monkeypatch.setattr(cm.Machine, "measure", classmethod(no_measuring))
    runs = []
    for _ in range(2):  # the same lines twice, no measurement
        runs.append([which.check_predict_a(sols["predict_a"], measure=False),
                     which.check_predict_b(sols["predict_b"], measure=False),
                     which.check_predict_c(sols["predict_c"], measure=False)])
    assert runs[0] == runs[1] == [f"Exercise {k} passed: 4/4 cases" for k in ("12.1", "12.2", "12.3")]


def test_a_wrong_answer_fails_the_same_way_every_run(monkeypatch):
    monkeypatch.setattr(cm.Machine, "measure", classmethod(lambda *a, **k: 1 / 0))
    fn = _ranked("lstm", "training", CANDIDATES["12.3"])
    msgs = []
    for _ in range(2):
        with pytest.raises(ExerciseFailed) as err:
            which.check_predict_c(fn, measure=False)
        msgs.append(str(err.value))
    assert msgs[0] == msgs[1]


def test_presets_are_fixed_numbers():
    for m in which.PRESETS.values():
        assert m.noise.ok and not m.busy
        assert all(not str(v).startswith("measured") for v in m.source.values())
    assert which.PRESETS[which.LAPTOP] == which.PRESETS[which.LAPTOP]


@pytest.mark.parametrize("ex", sorted(SOLUTIONS))
def test_calling_the_graders_own_model_choice_is_a_shortcut(machine, ex):
    """Issue 39, item 1: the right answers, from the grader's own function instead of the cost model's API."""
    names = {"12.1": ("batch", "T", "nh", "layers"), "12.2": ("T", "nh"), "12.3": ("batch", "T", "nh")}[ex]

    def copied(*args, machine):
        return which.model_choice(ex, dict(zip(names, args)), machine)[0]

    def student(**kw):
        return copied(*(kw[n] for n in names), machine=kw["machine"])

    with pytest.raises(ExerciseFailed, match=rf"Exercise {ex} failed:(.|\n)*calls which_checks\.model_choice"):
        CHECKS[ex](student, machine, measure=False)
