"""Worksheet checks of chapters 03 and 05: right answers pass, wrong ones get precise messages."""
import numpy as np
import pytest

import course_lib  # noqa: F401  (first: before numba)
from numba import njit, prange
from course_lib import batching, rnn
from course_lib.checks import ch03, ch05
from course_lib.checks.core import ExerciseFailed


def good_forward(params, X, h0=None):
    c = rnn.forward(params, X, h0)
    return c.H, c.Yhat


def test_batched_forward_passes(capsys):
    assert ch03.check_batched_forward(good_forward) == "Exercise 3.1 passed: 5/5 cases"
    assert "Exercise 3.1 passed: 5/5 cases" in capsys.readouterr().out


def test_batched_forward_ignoring_h0_fails_on_a_h0_case():
    def no_h0(params, X, h0=None):
        return good_forward(params, X, None)
    with pytest.raises(ExerciseFailed, match=r"case 4/5 .*h0 given[\s\S]*'H' differs"):
        ch03.check_batched_forward(no_h0)


def test_batched_forward_wrong_activation_names_output_and_time_step():
    def linear_out(params, X, h0=None):
        H, _ = good_forward(params, X, h0)
        return H, H @ params.Why
    with pytest.raises(ExerciseFailed, match=r"'Yhat' differs from the reference: first at index \(0, 0, 0\) \(time step 0\)"):
        ch03.check_batched_forward(linear_out)


def test_batched_forward_wrong_shapes_and_types():
    with pytest.raises(ExerciseFailed, match=r"expected H \(2, 5, 4\) and Yhat \(2, 5, 2\)"):
        ch03.check_batched_forward(lambda params, X, h0=None: (good_forward(params, X, h0)[0][:, 0], None))
    with pytest.raises(ExerciseFailed, match=r"expected a tuple \(H, Yhat\)"):
        ch03.check_batched_forward(lambda params, X, h0=None: good_forward(params, X, h0)[0])


def test_unsolved_exercise_raises_not_implemented():
    def todo(params, X, h0=None):
        raise NotImplementedError("Exercise 3.1: replace this line with your code")
    with pytest.raises(NotImplementedError):
        ch03.check_batched_forward(todo)
    with pytest.raises(NotImplementedError):
        ch05.check_fused_hidden_delta(njit(parallel=True)(_todo3))


def _todo3(dz, r, h):
    raise NotImplementedError("Exercise 5.1: replace this line with your code")


def test_step_intensity():
    assert ch03.check_step_intensity(batching.rnn_step_intensity).startswith("Exercise 3.2 passed")

    def forgot_output(B, nx, nh, itemsize=4):
        return 2 * B * (nx + nh) * nh / (itemsize * (nx * nh + nh * nh + B * nx + B * nh))
    with pytest.raises(ExerciseFailed, match=r"Exercise 3\.2 failed on case 1/6[\s\S]*Hint: FLOPs"):
        ch03.check_step_intensity(forgot_output)


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
    assert ch05.check_fused_hidden_delta(_good_delta) == "Exercise 5.1 passed: 5/5 cases"
    assert ch05.parfor_count(_good_delta) >= 1


def test_fused_hidden_delta_messages():
    with pytest.raises(ExerciseFailed, match="not a numba function compiled with parallel=True"):
        ch05.check_fused_hidden_delta(ch05.hidden_delta_reference)
    with pytest.raises(ExerciseFailed, match=r"parallelised no loop \(0 parfors\)[\s\S]*prange"):
        ch05.check_fused_hidden_delta(_serial_loop_delta)
    with pytest.raises(ExerciseFailed, match=r"'output' differs from the reference[\s\S]*add first"):
        ch05.check_fused_hidden_delta(_wrong_order_delta)
    assert ch05.parfor_count(len) is None


def test_output_delta_and_loss():
    assert ch05.check_output_delta_and_loss(ch05.output_delta_and_loss_reference).startswith("Exercise 5.2 passed")

    def mean_loss(z, y):
        d, loss = ch05.output_delta_and_loss_reference(z, y)
        return d, loss / z.size
    with pytest.raises(ExerciseFailed, match=r"'loss' differs[\s\S]*sum of squares"):
        ch05.check_output_delta_and_loss(mean_loss)

    def one_output(z, y):
        return ch05.output_delta_and_loss_reference(z, y)[0]
    with pytest.raises(ExerciseFailed, match="expected a tuple of 2 outputs"):
        ch05.check_output_delta_and_loss(one_output)
