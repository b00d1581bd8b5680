"""Worksheet checks of chapters 03 and 05: right answers pass, wrong ones get precise messages."""
import numpy as np
import pytest

import course_lib  # noqa: F401  (first: before numba)
from numba import njit, prange
from course_lib.experiments import batching
from course_lib.models import rnn
from course_lib.teaching.checks import batching as batching_checks, threads_fusion as threads_fusion_checks
from course_lib.teaching.checks.core import ExerciseFailed


def good_forward(params, X, h0=None):
    c = rnn.forward(params, X, h0)
    return c.H, c.Yhat


def test_batched_forward_passes(capsys):
    assert batching_checks.check_batched_forward(good_forward) == "Exercise 3.1 passed: 5/5 cases"
    assert "Exercise 3.1 passed: 5/5 cases" in capsys.readouterr().out


def test_batched_forward_ignoring_h0_fails_on_a_h0_case():
    def no_h0(params, X, h0=None):
        return good_forward(params, X, None)
    with pytest.raises(ExerciseFailed, match=r"case 4/5 .*h0 given[\s\S]*'H' differs"):
        batching_checks.check_batched_forward(no_h0)


def test_batched_forward_wrong_activation_names_output_and_time_step():
    def linear_out(params, X, h0=None):
        H, _ = good_forward(params, X, h0)
        return H, H @ params.Why
    with pytest.raises(ExerciseFailed, match=r"'Yhat' differs from the reference: first at index \(0, 0, 0\) \(time step 0\)"):
        batching_checks.check_batched_forward(linear_out)


def test_batched_forward_wrong_shapes_and_types():
    with pytest.raises(ExerciseFailed, match=r"expected H \(2, 5, 4\) and Yhat \(2, 5, 2\)"):
        batching_checks.check_batched_forward(lambda params, X, h0=None: (good_forward(params, X, h0)[0][:, 0], None))
    with pytest.raises(ExerciseFailed, match=r"expected a tuple \(H, Yhat\)"):
        batching_checks.check_batched_forward(lambda params, X, h0=None: good_forward(params, X, h0)[0])


def test_unsolved_exercise_raises_not_implemented():
    def todo(params, X, h0=None):
        raise NotImplementedError("Exercise 3.1: replace this line with your code")
    with pytest.raises(NotImplementedError):
        batching_checks.check_batched_forward(todo)
    with pytest.raises(NotImplementedError):
        threads_fusion_checks.check_fused_hidden_delta(njit(parallel=True)(_todo3))


def _todo3(dz, r, h):
    raise NotImplementedError("Exercise 5.1: replace this line with your code")


def test_step_intensity():
    assert batching_checks.check_step_intensity(batching.rnn_step_intensity).startswith("Exercise 3.2 passed")

    def forgot_output(B, nx, nh, itemsize=4):
        return 2 * B * (nx + nh) * nh / (itemsize * (nx * nh + nh * nh + B * nx + B * nh))
    with pytest.raises(ExerciseFailed, match=r"Exercise 3\.2 failed on case 1/6[\s\S]*Hint: FLOPs"):
        batching_checks.check_step_intensity(forgot_output)


@njit(parallel=True)
def _good_delta(dz, r, h):
    out = np.empty_like(dz)
    for i in prange(dz.shape[0]):
        for j in range(dz.shape[1]):
            out[i, j] = (dz[i, j] + r[i, j]) * (1 - h[i, j] * h[i, j])
    return out


@njit(parallel=True)
def _serial_loop_delta(dz, r, h):
    out = np.empty_like(dz)
    for i in range(dz.shape[0]):
        for j in range(dz.shape[1]):
            out[i, j] = (dz[i, j] + r[i, j]) * (1 - h[i, j] * h[i, j])
    return out


@njit(parallel=True)
def _wrong_order_delta(dz, r, h):
    out = np.empty_like(dz)
    for i in prange(dz.shape[0]):
        for j in range(dz.shape[1]):
            out[i, j] = dz[i, j] + r[i, j] * (1 - h[i, j] * h[i, j])
    return out


def test_fused_hidden_delta():
    assert threads_fusion_checks.check_fused_hidden_delta(_good_delta) == "Exercise 5.1 passed: 5/5 cases"
    assert threads_fusion_checks.parfor_count(_good_delta) >= 1


def test_fused_hidden_delta_messages():
    with pytest.raises(ExerciseFailed, match="not a numba function compiled with parallel=True"):
        threads_fusion_checks.check_fused_hidden_delta(threads_fusion_checks.hidden_delta_reference)
    with pytest.raises(ExerciseFailed, match=r"parallelised no loop \(0 parfors\)[\s\S]*prange"):
        threads_fusion_checks.check_fused_hidden_delta(_serial_loop_delta)
    with pytest.raises(ExerciseFailed, match=r"'output' differs from the reference[\s\S]*add first"):
        threads_fusion_checks.check_fused_hidden_delta(_wrong_order_delta)
    assert threads_fusion_checks.parfor_count(len) is None


def test_output_delta_and_loss():
    assert threads_fusion_checks.check_output_delta_and_loss(threads_fusion_checks.output_delta_and_loss_reference).startswith("Exercise 5.2 passed")

    def mean_loss(z, y):
        d, loss = threads_fusion_checks.output_delta_and_loss_reference(z, y)
        return d, loss / z.size
    with pytest.raises(ExerciseFailed, match=r"'loss' differs[\s\S]*sum of squares"):
        threads_fusion_checks.check_output_delta_and_loss(mean_loss)

    def one_output(z, y):
        return threads_fusion_checks.output_delta_and_loss_reference(z, y)[0]
    with pytest.raises(ExerciseFailed, match="expected a tuple of 2 outputs"):
        threads_fusion_checks.check_output_delta_and_loss(one_output)
