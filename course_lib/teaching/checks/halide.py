"""Checks for worksheet 06 (Halide): schedule the hidden-state product; fuse two stages into one.

Exercise 6.1 -- ``check_hidden_schedule(my_schedule)``: ``my_schedule(stage)`` schedules a fresh
``halide_rnn.HiddenStage`` (``h = tanh(P + h_prev W)``, two-stage definition). Passes when the
numbers are right, the loop nest is vectorised and tiled, and its speed reaches ``min_fraction``
of the course's best schedule *measured in the same run* (:func:`course_lib.teaching.checks.speed.judge_speed`:
fresh inputs for every timed call, every timed result compared with numpy's ``tanh(P + h_prev W)``; a
ratio judged from its interval, never an absolute time: one interval wholly above the bar passes, a fail
needs every one of ``retries`` measurements wholly below it -- one bad run never fails a correct schedule --
and anything between is not judged, :class:`.speed.SpeedNotJudged`).

Exercise 6.2 -- ``check_fused_backward(fused_backward)``: ``fused_backward(dH, dnext, WT, H)``
returns one Func computing ``(dH + dnext WT) (1 - H²)`` as a single definition, so its pipeline
makes one pass fewer than ``halide_rnn.backward_two_stage``.
"""
from __future__ import annotations

import numpy as np

from ...models import halide_rnn as H
from .core import Case, ExerciseFailed, compare_outputs, passed
from .speed import judge_speed

__all__ = ["check_hidden_schedule", "check_fused_backward", "MIN_FRACTION", "SPEED_SHAPE"]

MIN_FRACTION = 0.25       # of the course's best schedule's speed, measured alongside
SPEED_SHAPE = (64, 512)   # (B rows, n): the timed hidden-state product is (B, n) @ (n, n)
_SHAPES_61 = [(1, 1, 1), (5, 20, 33), (70, 37, 45), (64, 16, 32)]  # (B, n_in, n_out), tails of tiles
_SHAPES_62 = [(1, 1), (5, 9), (70, 45), (33, 16)]                  # (B, n)


def _fail(ex: str, msg: str, hint: str = "") -> ExerciseFailed:
    return ExerciseFailed(f"Exercise {ex} failed:\n  {msg}" + (f"\n  Hint: {hint}" if hint else ""))


def _require_halide(ex: str) -> None:
    ok, why = H.available()
    if not ok:
        raise _fail(ex, f"Halide is not available here, so this exercise cannot be checked ({why})")


def _compile_student_schedule(ex: str, schedule_fn):
    stage = H.hidden_stage()
    try:
        schedule_fn(stage)
    except NotImplementedError:
        raise
    except Exception as exc:
        raise _fail(ex, f"your schedule raised {type(exc).__name__}: {exc}",
                    "schedule only the Funcs of the stage: stage.h and stage.prod (its update is "
                    "stage.prod.update()), with the Vars stage.j, stage.i and the RDom stage.k.") from exc
    try:
        return H.compile_hidden(stage)
    except Exception as exc:
        raise _fail(ex, f"Halide could not compile your schedule: {type(exc).__name__}: {exc}",
                    "a reduction's RVar (stage.k.x) cannot be parallel or vectorized; tile and vectorize "
                    "the pure Vars stage.j and stage.i.") from exc


def _run_pipeline(ex: str, fn, args, label: str, hint: str = ""):
    """Run a compiled pipeline; a Halide runtime error (e.g. an access out of an input's bounds) becomes a
    message naming the case, not a crash of the check."""
    try:
        return fn(*args)
    except Exception as exc:
        raise _fail(ex, f"your pipeline compiled but failed when run on {label}: {type(exc).__name__}: {exc}",
                    hint or "a schedule alone cannot make a correct algorithm fail: keep the stage's definitions "
                            "and only call scheduling methods.") from exc


def _slow_reasons(nest: str) -> list[str]:
    """What the loop nest of a slow schedule lacks, read from the nest itself."""
    reasons = []
    lines = nest.splitlines()
    if not any(ln.strip().startswith("parallel ") for ln in lines):
        reasons.append("no loop is parallel (stage.h.parallel(io) runs the row tiles on all cores)")
    # is the reduction over k vectorised: a vectorised loop around the k loop, or inside it?
    k_found, k_vectorised = False, False
    for n_line, ln in enumerate(lines):
        text = ln.strip()
        if not text.startswith(("for h_k", "for k")):
            continue
        k_found = True
        indent = len(ln) - len(ln.lstrip())
        inner = []
        for m in lines[n_line + 1:]:
            if len(m) - len(m.lstrip()) <= indent:
                break
            inner.append(m.strip())
        # an outer vectorised loop only counts if the k loop lies inside it (no dedent back past it since)
        enclosing = False
        for m in reversed(lines[:n_line]):
            mi = len(m) - len(m.lstrip())
            if mi < indent:
                if m.strip().startswith("vectorized "):
                    enclosing = True
                    break
                indent = mi
        k_vectorised = k_vectorised or enclosing or any(t.startswith("vectorized ") for t in inner)
    if k_found and not k_vectorised:
        reasons.append("the accumulator's update (the loop over k) is scalar: no vectorised loop inside or "
                       "around it (stage.prod.update().vectorize(stage.j, 16))")
    return reasons


def _loops_of(nest: str, func: str) -> list[str]:
    """The loop lines of ``func``'s own pass (``produce func:`` up to the next produce/consume at its level)."""
    lines = nest.splitlines()
    out, inside, level = [], False, 0
    for line in lines:
        text = line.strip()
        indent = len(line) - len(line.lstrip())
        if text == f"produce {func}:":
            inside, level = True, indent
            continue
        if inside and indent <= level and text.startswith(("produce ", "consume ")):
            inside = False
        if inside and text.startswith(("for ", "parallel ", "vectorized ", "unrolled ")):
            out.append(text)
    return out


def check_hidden_schedule(schedule_fn, *, min_fraction: float = MIN_FRACTION, retries: int = 3) -> str:
    """Exercise 6.1: a schedule for the hidden-state product (see the module doc).

    Property: a legal schedule that tiles h and vectorises its columns, fast relative to the course's best
    schedule on this machine. Four shapes (ragged tiles included) must give the algorithm's numbers, inputs
    unchanged; the loop nest must hold a vectorized loop and h's row and column loops split; the speed ratio to
    the best schedule, measured alongside, must lie wholly above :data:`MIN_FRACTION` -- one bad measurement
    never fails it (every measurement must miss) -- and the pass prints the ratio earned."""
    ex = "6.1"
    if not callable(schedule_fn):
        raise _fail(ex, f"expected a function my_schedule(stage), got {type(schedule_fn).__name__}")
    _require_halide(ex)
    fn = _compile_student_schedule(ex, schedule_fn)
    rng = np.random.default_rng(61)
    for n_case, (B, n_in, n_out) in enumerate(_SHAPES_61, start=1):
        P = rng.standard_normal((B, n_out)).astype(np.float32)
        hp = rng.uniform(-1, 1, (B, n_in)).astype(np.float32)
        W = (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32)
        label = f"case {n_case}/{len(_SHAPES_61)} (B={B}, n_in={n_in}, n_out={n_out})"
        want = np.tanh(P + hp @ W)
        kept = {"P": P.copy(), "h_prev": hp.copy(), "W": W.copy()}
        got = _run_pipeline(ex, fn, (P, hp, W), label)
        changed = [k for k, v in zip(kept, (P, hp, W)) if not np.array_equal(kept[k], v)]
        if changed:
            raise _fail(ex, f"on {label} your pipeline changed its input '{changed[0]}' in place",
                        "a schedule only says where and when values are computed: build a fresh stage and only call "
                        "scheduling methods; never write into P, h_prev or W.")
        msg = compare_outputs(got, want, name="h", rtol=1e-4, atol=1e-5, time_axis=None)
        if msg:
            raise _fail(ex, f"wrong numbers on case {n_case}/{len(_SHAPES_61)} (B={B}, n_in={n_in}, "
                            f"n_out={n_out}): {msg}",
                        "a schedule never changes what is computed: did you change stage.h's or stage.prod's "
                        "definition? Build a fresh stage and only call scheduling methods.")
    nest = fn.loop_nest
    if "vectorized" not in nest:
        raise _fail(ex, "the loop nest has no 'vectorized' loop: your schedule does not use SIMD.\n"
                        "  Your loop nest:\n" + _indent(nest),
                    "vectorize the columns: e.g. stage.h.vectorize(ji, 16) after tiling, and "
                    "stage.prod.vectorize(stage.j, 16); stage.prod.update().vectorize(stage.j, 16).")
    h_loops = _loops_of(nest, "h")
    split_i = any(" h_i." in ln for ln in h_loops)
    split_j = any(" h_j." in ln and "vectorized" not in ln for ln in h_loops)
    if not (split_i and split_j):
        which = "the row loop h_i" if not split_i else "the column loop h_j (outside the vector lanes)"
        raise _fail(ex, f"the output h is not tiled: {which} is not split into tiles.\n"
                        "  The loops of h:\n" + _indent("\n".join(h_loops)),
                    "stage.h.tile(stage.j, stage.i, jo, io, ji, ii, 16, 64, hl.TailStrategy.GuardWithIf), then "
                    "stage.prod.compute_at(stage.h, jo).")
    # speed: a ratio to the course's best schedule, measured now on fresh inputs, every result compared
    best = H.compile_hidden(H.apply_schedule(H.hidden_stage(), "tiled+simd+parallel"))
    reasons = _slow_reasons(nest)
    judged = judge_speed(ex, fn, _hidden_reference, best, _timed_hidden_input, min_speedup=min_fraction,
                baseline_name="course", baseline_desc="the course's best schedule", rtol=1e-4, atol=1e-5,
                retries=retries, blas_threads=None, context="your schedule is right and vectorised",
                explain="".join(f"In your loop nest {r}. " for r in reasons).strip(),
                hint="compute the accumulator per tile (stage.prod.compute_at(stage.h, jo)), loop the update as "
                     "k outermost (stage.prod.update().reorder(stage.j, stage.i, stage.k.x)) and parallelize "
                     "the row tiles (stage.h.parallel(io)).")
    line = passed(ex, len(_SHAPES_61), len(_SHAPES_61))
    print(f"  speed: {judged.earned}")
    return line


def _hidden_reference(P, h_prev, W):
    """``tanh(P + h_prev W)`` with numpy, float32: what every schedule must compute."""
    return np.tanh(P + h_prev @ W)


def _timed_hidden_input(rng: np.random.Generator) -> Case:
    """Fresh ``P (B, n)``, ``h_prev (B, n)``, ``W (n, n)`` of :data:`SPEED_SHAPE` for one timed call."""
    B, n = SPEED_SHAPE
    return Case(kwargs=dict(P=rng.standard_normal((B, n)).astype(np.float32),
                            h_prev=rng.uniform(-1, 1, (B, n)).astype(np.float32),
                            W=(rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)),
                label=f"B={B}, n={n}, float32")


def _indent(text: str) -> str:
    return "\n".join("    " + ln for ln in text.splitlines())


def check_fused_backward(build_fn) -> str:
    """Exercise 6.2: ``build_fn(dH, dnext, WT, H) -> hl.Func``, one definition, one pass fewer.

    Property: the two stages fused into one pure definition. The numbers against numpy on several shapes, then
    the passes of the compiled loop nest counted: fewer than the two-stage version's (an intermediate Func
    computed at root is a pass of its own, and is named with the loop nest)."""
    ex = "6.2"
    if not callable(build_fn):
        raise _fail(ex, f"expected a function fused_backward(dH, dnext, WT, H), got {type(build_fn).__name__}")
    _require_halide(ex)
    try:
        fn = H.compile_func(build_fn, 4)
    except NotImplementedError:
        raise
    except TypeError as exc:
        raise _fail(ex, f"{exc}", "return the Func you defined, e.g. `return dpre`.") from exc
    except Exception as exc:
        raise _fail(ex, f"your function could not be built and compiled: {type(exc).__name__}: {exc}") from exc
    rng = np.random.default_rng(62)
    for n_case, (B, n) in enumerate(_SHAPES_62, start=1):
        dH, dn = rng.standard_normal((B, n)).astype(np.float32), rng.standard_normal((B, n)).astype(np.float32)
        WT = rng.standard_normal((n, n)).astype(np.float32)
        Hc = rng.uniform(-1, 1, (B, n)).astype(np.float32)
        got = _run_pipeline(ex, fn, (dH, dn, WT, Hc), f"case {n_case}/{len(_SHAPES_62)} (B={B}, n={n})",
                            "index every input inside its bounds: dnext[k, i] and WT[j, k] with k over "
                            "dnext.dim(0).extent(); Halide indexes [column, row].")
        msg = compare_outputs(got, (dH + dn @ WT) * (1 - Hc * Hc), name="dpre", rtol=1e-4,
                              atol=1e-4, time_axis=None)
        if msg:
            raise _fail(ex, f"wrong numbers on case {n_case}/{len(_SHAPES_62)} (B={B}, n={n}): {msg}",
                        "dpre[j, i] = (dH[j, i] + hl.sum(dnext[k, i] * WT[j, k])) * (1 - H[j, i] * H[j, i]) "
                        "with k an hl.RDom over dnext's columns (dnext.dim(0).extent()).")
    two = H.compile_func(H.backward_two_stage, 4).stages
    if fn.stages >= two:
        raise _fail(ex, f"your pipeline still makes {fn.stages} passes of its own (the two-stage version makes "
                        f"{two}): nothing was fused.\n  Your loop nest:\n" + _indent(fn.loop_nest),
                    "write the whole formula as ONE pure definition with an inline reduction (hl.sum), "
                    "with no intermediate Func computed at root.")
    return passed(ex, len(_SHAPES_62), len(_SHAPES_62))
