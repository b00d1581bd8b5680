"""Worksheet checks of chapters 03 and 05: right answers pass, wrong ones get precise messages."""
import numpy as np
import pytest

import course_lib  # noqa: F401  (first: before numba)
from numba import njit, prange
from helpers import solution
from course_lib.experiments import batching
from course_lib.models import rnn
from course_lib.teaching.checks import batching as batching_checks, threads_fusion as threads_fusion_checks
from course_lib.teaching.checks.core import ExerciseFailed


# the worksheet's own answer: the course's rnn.forward would be a shortcut (issue 29, item 8)
good_forward = solution("03_batching", "batched_forward")


def test_batched_forward_passes(capsys, fake_clock):
    fake_clock.cost(one_at_a_time=5e-3, yours=1e-3)  # B sequences in one pass: about B x faster
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
    assert batching_checks.check_step_intensity(solution("03_batching", "rnn_step_intensity")).startswith(
        "Exercise 3.2 passed")
    with pytest.raises(ExerciseFailed, match="calls batching.rnn_step_intensity"):
        batching_checks.check_step_intensity(batching.rnn_step_intensity)

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


def test_fused_hidden_delta(fake_clock):
    fake_clock.cost(numpy_passes=3e-3, yours=1e-3)  # one pass instead of three
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
    assert threads_fusion_checks.check_output_delta_and_loss(njit(_fused_output)).startswith("Exercise 5.2 passed")

    def mean_loss(z, y):
        d, loss = threads_fusion_checks.output_delta_and_loss_reference(z, y)
        return d, loss / z.size
    with pytest.raises(ExerciseFailed, match=r"'loss' differs[\s\S]*sum of squares"):
        threads_fusion_checks.check_output_delta_and_loss(mean_loss)

    def one_output(z, y):
        return threads_fusion_checks.output_delta_and_loss_reference(z, y)[0]
    with pytest.raises(ExerciseFailed, match="expected a tuple of 2 outputs"):
        threads_fusion_checks.check_output_delta_and_loss(one_output)


def test_batched_forward_in_place_is_named():
    def clobbers_h0(params, X, h0=None):
        H, Y = good_forward(params, X, h0)
        if h0 is not None:
            h0[:] = H[-1]  # "carry the state" by writing into the caller's array
        return H, Y
    with pytest.raises(ExerciseFailed, match=r"case 4/5[\s\S]*changed its input h0 in place"):
        batching_checks.check_batched_forward(clobbers_h0)

    def scales_x(params, X, h0=None):
        X *= 1.0
        X[0] = 0.5 * X[0] / 0.5 + 0.0
        np.clip(X, -1, 1, out=X)
        X[...] = X[::-1]
        return good_forward(params, X[::-1], h0)
    with pytest.raises(ExerciseFailed, match=r"changed its input X in place"):
        batching_checks.check_batched_forward(scales_x)


def test_batched_forward_loop_over_sequences_is_counted():
    def per_sequence(params, X, h0=None):
        return batching.forward_one_at_a_time(params, X, h0)
    with pytest.raises(ExerciseFailed, match=r"for B=6 sequences but \d+ for B=1[\s\S]*loops over the sequences"):
        batching_checks.check_batched_forward(per_sequence)

    def per_sequence_loop(params, X, h0=None):
        T, B, _ = X.shape
        H = np.empty((T, B, params.nh))
        Y = np.empty((T, B, params.ny))
        for b in range(B):
            c = rnn.forward(params, X[:, b:b + 1], None if h0 is None else h0[b:b + 1])
            H[:, b], Y[:, b] = c.H[:, 0], c.Yhat[:, 0]
        return H, Y
    with pytest.raises(ExerciseFailed, match=r"loops over the sequences"):
        batching_checks.check_batched_forward(per_sequence_loop)


def test_batched_forward_speed_is_measured(fake_clock):
    """The course loop costs 1 ms a call on the fake clock; the right batched forward that also waits 20 ms
    (charged to the clock, not slept) is 21x slower and fails; without the wait (0.1 ms) it passes."""
    fake_clock.cost(one_at_a_time=1e-3, yours=1e-4)

    def slow(params, X, h0=None):
        fake_clock.advance(0.02)
        return good_forward(params, X, h0)
    with pytest.raises(ExerciseFailed, match=r"speed test[\s\S]*as fast as the course's one-sequence-at-a-time loop"):
        batching_checks.check_batched_forward(slow, retries=1)
    assert batching_checks.check_batched_forward(good_forward).startswith("Exercise")
    assert fake_clock.calls["yours"] >= 5


@njit(parallel=True)
def _inner_prange_delta(dz, r, h):
    out = np.empty_like(dz)
    for i in range(dz.shape[0]):
        for j in prange(dz.shape[1]):
            out[i, j] = (dz[i, j] + r[i, j]) * (1 - h[i, j] * h[i, j])
    return out


@njit(parallel=True)
def _numpy_in_numba_delta(dz, r, h):
    """Right numbers, outer prange, but every element is recomputed from scratch many times over
    (plus whole-array temporaries): several times slower than numpy's separate passes."""
    out = np.empty_like(dz)
    for i in prange(dz.shape[0]):
        for j in range(dz.shape[1]):
            acc = 0.0
            for _ in range(24):
                acc = (dz[i, j] + r[i, j]) * (1.0 - h[i, j] * h[i, j]) + 0.0 * acc
            out[i, j] = acc
    return out + 0.0 * (dz + r)


@njit(parallel=True)
def _in_place_delta(dz, r, h):
    for i in prange(dz.shape[0]):
        for j in range(dz.shape[1]):
            dz[i, j] = (dz[i, j] + r[i, j]) * (1 - h[i, j] * h[i, j])
    return dz


def test_fused_hidden_delta_structure_and_speed(fake_clock):
    with pytest.raises(ExerciseFailed, match=r"prange loop \(line \d+, over j\) sits inside the loop over i"):
        threads_fusion_checks.check_fused_hidden_delta(_inner_prange_delta)
    with pytest.raises(ExerciseFailed, match=r"changed its input dz in place"):
        threads_fusion_checks.check_fused_hidden_delta(_in_place_delta)
    fake_clock.cost(numpy_passes=1e-3, yours=24e-3)  # 24 recomputations of every element
    with pytest.raises(ExerciseFailed, match=r"speed test[\s\S]*as fast as numpy's separate passes"):
        threads_fusion_checks.check_fused_hidden_delta(_numpy_in_numba_delta, retries=1)


def test_output_delta_and_loss_must_be_numba():
    with pytest.raises(ExerciseFailed, match=r"plain Python/numpy function, not a numba function"):
        threads_fusion_checks.check_output_delta_and_loss(threads_fusion_checks.output_delta_and_loss_reference)


def _fused_output(z, y):
    delta = np.empty_like(z)
    loss = 0.0
    for i in range(z.shape[0]):
        for j in range(z.shape[1]):
            yh = np.tanh(z[i, j])
            e = yh - y[i, j]
            loss += e * e
            delta[i, j] = 2.0 * e * (1.0 - yh * yh)
    return delta, loss


# --------------------------------------------------------------------------- 5.1: speed checks that judge the answer
@njit(parallel=True)
def _gamed_delta(dz, r, h):
    """Right on the small cases; on the timed size (512 rows) it returns zeros without the work."""
    out = np.zeros_like(dz)
    if dz.shape[0] >= 512:
        return out
    for i in prange(dz.shape[0]):
        for j in range(dz.shape[1]):
            out[i, j] = (dz[i, j] + r[i, j]) * (1.0 - h[i, j] * h[i, j])
    return out


@njit(parallel=True)
def _mutating_on_timed_size(dz, r, h):
    """Right, but on the timed size it overwrites h in place (squares it) to save a multiplication later."""
    out = np.empty_like(dz)
    big = dz.shape[0] >= 512
    for i in prange(dz.shape[0]):
        for j in range(dz.shape[1]):
            hh = h[i, j] * h[i, j]
            out[i, j] = (dz[i, j] + r[i, j]) * (1.0 - hh)
            if big:
                h[i, j] = hh
    return out


@njit(parallel=True)
def _array_expression_delta(dz, r, h):
    """Right numbers, parallel=True, but no prange loop: numba fuses the array expression itself."""
    return (dz + r) * (1.0 - h * h)


def test_51_a_cheap_answer_on_the_timed_size_is_a_gamed_timer(fake_clock):
    fake_clock.cost(numpy_passes=3e-3, yours=1e-3)
    with pytest.raises(ExerciseFailed, match=r"Exercise 5\.1 failed on the speed test \(dz, r, h of shape \(512, 1024\)"
                                             r"[\s\S]*gamed timer[^:]*: the result returned while timed differs"):
        threads_fusion_checks.check_fused_hidden_delta(_gamed_delta)


def test_51_changing_an_input_while_timed_is_named(fake_clock):
    fake_clock.cost(numpy_passes=3e-3, yours=1e-3)
    with pytest.raises(ExerciseFailed, match=r"Exercise 5\.1 failed on the speed test[\s\S]*changed its input 'h'"):
        threads_fusion_checks.check_fused_hidden_delta(_mutating_on_timed_size)


def test_51_whole_array_expressions_skip_the_loop_and_are_named():
    with pytest.raises(ExerciseFailed, match=r"from whole-array expressions: your source has no `for \.\.\. in prange"):
        threads_fusion_checks.check_fused_hidden_delta(_array_expression_delta)


def test_51_far_too_slow_fails_even_on_a_busy_machine(fake_clock, busy_machine):
    fake_clock.cost(numpy_passes=1e-3, yours=100e-3)
    with pytest.raises(ExerciseFailed, match=r"only 0\.01x as fast as numpy's separate passes[\s\S]*whole interval"):
        threads_fusion_checks.check_fused_hidden_delta(_good_delta)


def test_51_passes_twice_in_a_row_and_restores_the_thread_counts(fake_clock):
    """Issue 29, item 1: the worksheet's own solution failed when its check ran a second time."""
    from threadpoolctl import threadpool_info
    from course_lib.core import backend

    def blas():
        return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
    before = (backend.get_threads(), blas())
    fake_clock.cost(numpy_passes=3e-3, yours=1e-3)
    for _ in range(2):
        assert threads_fusion_checks.check_fused_hidden_delta(_good_delta) == "Exercise 5.1 passed: 5/5 cases"
        assert (backend.get_threads(), blas()) == before


def test_51_the_cause_large_temporaries_stop_faulting_in_fresh_pages():
    """The cause of item 1: whether a fresh 4 MiB result reused warm heap pages or faulted in new ones flipped
    with the process's allocation history. After steady_memory() (judge_speed calls it) it never faults."""
    resource = pytest.importorskip("resource")
    from course_lib.teaching.checks.speed import steady_memory

    if not steady_memory():
        pytest.skip("not glibc: the allocator is left as it is")
    dz = np.ones((512, 1024))
    threads_fusion_checks.hidden_delta_reference(dz, dz, dz)          # warm: the heap grows once
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        threads_fusion_checks.hidden_delta_reference(dz, dz, dz)      # two 4 MiB temporaries per call
        _good_delta(dz, dz, dz)
    per_call = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20
    assert per_call < 64, f"{per_call:.0f} page faults per call (a 4 MiB array is 1024 pages)"


# --------------------------------------------------------------------------- 3.1: speed checks that judge the answer
def _batched_on_timed_shape(change):
    """The right batched forward, except on the timed shape (B = 64), where ``change(params, X)`` answers."""
    def forward(params, X, h0=None):
        if X.shape[1] == batching_checks.SPEED_SHAPE["batch"]:
            return change(params, X)
        return good_forward(params, X, h0)
    return forward


def test_31_a_cached_answer_while_timed_is_a_gamed_timer(fake_clock):
    fake_clock.cost(one_at_a_time=5e-3, yours=1e-3)
    cache = []

    def cached(params, X):
        if not cache:
            cache.append(good_forward(params, X))
        return cache[0]
    with pytest.raises(ExerciseFailed, match=r"Exercise 3\.1 failed on the speed test \(T=16, B=64[\s\S]*gamed timer[^:]*: "
                                             r"the result returned while timed differs from the reference"):
        batching_checks.check_batched_forward(_batched_on_timed_shape(cached))


def test_31_changing_the_input_while_timed_is_named(fake_clock):
    fake_clock.cost(one_at_a_time=5e-3, yours=1e-3)

    def clips_in_place(params, X):
        out = good_forward(params, X)
        np.clip(X, -0.5, 0.5, out=X)
        return out
    with pytest.raises(ExerciseFailed, match=r"Exercise 3\.1 failed on the speed test[\s\S]*changed its input 'X'"):
        batching_checks.check_batched_forward(_batched_on_timed_shape(clips_in_place))


def test_31_far_too_slow_fails_even_on_a_busy_machine(fake_clock, busy_machine):
    fake_clock.cost(one_at_a_time=1e-3, yours=100e-3)
    with pytest.raises(ExerciseFailed, match=r"only 0\.01x as fast as the course's one-sequence[\s\S]*whole interval"):
        batching_checks.check_batched_forward(good_forward)


def test_31_passes_twice_in_a_row(fake_clock):
    fake_clock.cost(one_at_a_time=5e-3, yours=1e-3)
    for _ in range(2):
        assert batching_checks.check_batched_forward(good_forward) == "Exercise 3.1 passed: 5/5 cases"


# --------------------------------------------------------------------------- issue 39, item 1: 5.2's one pass
@njit
def _numpy_inside_njit(z, y):
    yh = np.tanh(z)
    e = yh - y
    return 2.0 * e * (1.0 - yh * yh), np.sum(e * e)


@njit
def _loop_then_sum(z, y):
    delta = np.empty_like(z)
    e = np.empty_like(z)
    for i in range(z.shape[0]):
        for j in range(z.shape[1]):
            yh = np.tanh(z[i, j])
            e[i, j] = yh - y[i, j]
            delta[i, j] = 2.0 * e[i, j] * (1.0 - yh * yh)
    return delta, np.sum(e * e)


def test_52_numpy_expressions_inside_njit_are_not_one_pass():
    with pytest.raises(ExerciseFailed, match=r"(?s)not one pass over the data: your source has no for loop"):
        threads_fusion_checks.check_output_delta_and_loss(_numpy_inside_njit)


def test_52_a_loop_with_the_loss_summed_afterwards_is_a_second_pass():
    with pytest.raises(ExerciseFailed, match=r"(?s)not one pass.*np\.sum\(\.\.\.\).*accumulate the loss inside"):
        threads_fusion_checks.check_output_delta_and_loss(_loop_then_sum)


def test_52_the_one_loop_answer_passes(capsys):
    assert threads_fusion_checks.check_output_delta_and_loss(njit(_fused_output)) == "Exercise 5.2 passed: 5/5 cases"
    assert threads_fusion_checks.check_output_delta_and_loss(solution("05_threads_fusion", "output_delta_and_loss"))
