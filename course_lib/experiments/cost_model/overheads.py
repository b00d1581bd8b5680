"""The cost model's per-call price for each model kind (experiments folder, chapter 12), *measured by a
micro-benchmark* of the course's own code -- never fitted to the chapter configurations it predicts.

Why: the price of "one library call" measured on ``np.add`` of 8 floats (``Machine.call_s``) is not what a
cell of the course's GRU or LSTM pays per counted call: slicing, ``out=`` arguments, Python between the
calls, small temporaries. So for each kind and mode, :func:`measure_call_costs` runs :func:`.execute.run`
with ``method="batched"`` on a *tiny* problem (batch 1, nh = 4, T = 64: the arithmetic is negligible),
divides the time by the steps and by the model's count of calls per step (:func:`.model.step_cost`), and
so gets seconds per counted call for that kind -- the one constant the model's ``calls`` term uses
(:meth:`.machine.Machine.call_cost`). The chapter configurations stay a hold-out: they never see this fit.

``{(kind, mode): seconds per counted call}``; a kind the course has no code for keeps ``Machine.call_s``.
"""
from __future__ import annotations

from ...core import timing
from ...core.validate import check_bool
from .execute import inputs, run
from .model import Problem, _calls_per_step, _train

__all__ = ["TINY", "measure_call_costs"]

TINY = dict(batch=1, T=64, nh=4, layers=1)


def measure_call_costs(quick: bool = False) -> dict:
    """``{(kind, mode): seconds per counted library call}`` from tiny runs of the course's code (see the
    module docstring); the minimum over repeats (a busy machine only adds time)."""
    quick = check_bool(quick, "quick")
    out = {}
    for kind in ("rnn", "gru", "lstm"):
        for mode in ("inference", "training"):
            if kind == "rnn" and mode == "training":
                continue  # run() has no rnn training code
            prob = Problem(kind, mode, ny=1 if kind == "rnn" else 0, **TINY)
            data = inputs(prob)
            t = timing.measure(lambda: run(prob, "batched", data=data), repeat=3 if quick else 7, warmup=1,
                               min_time=2e-3 if quick else 1e-2).min
            out[(kind, mode)] = t / (prob.T * _calls_per_step(prob) * _train(prob))
    if ("gru", "training") in out:
        out[("rnn", "training")] = out[("rnn", "inference")] * out[("gru", "training")] / out[("gru", "inference")]
    return out
