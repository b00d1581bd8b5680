"""Exercise 8.6's check: a right matmul solution passes; exp(G) alone (0/0 in a long chunk), an element-wise
solution (no products) and a loop over chunks (products grow with n) fail, each with its reason."""
import numpy as np
import pytest

import course_lib  # noqa: F401
from course_lib.teaching.checks import chunked as ck
from course_lib.teaching.checks.core import ExerciseFailed


def good(Q, K, V, G):
    A = Q @ K.transpose(0, 2, 1)
    diff = G[:, :, None] - G[:, None, :]
    L = np.exp(np.where(np.tril(np.ones((G.shape[1],) * 2, bool)), diff, -np.inf)).astype(Q.dtype)
    return (A * L) @ V


def exp_alone(Q, K, V, G):
    e = np.exp(G)
    with np.errstate(all="ignore"):
        L = np.tril(e[:, :, None] / e[:, None, :]).astype(Q.dtype)
    return ((Q @ K.transpose(0, 2, 1)) * L) @ V


def elementwise(Q, K, V, G):
    L = np.exp(np.where(np.tril(np.ones((G.shape[1],) * 2, bool)), G[:, :, None] - G[:, None, :], -np.inf))
    A = (Q.view(np.ndarray)[:, :, None, :] * K.view(np.ndarray)[:, None, :, :]).sum(-1) * L
    return (A[..., None] * V.view(np.ndarray)[:, None, :, :]).sum(2).astype(Q.dtype)


def per_chunk(Q, K, V, G):
    return np.stack([good(Q[i:i + 1], K[i:i + 1], V[i:i + 1], G[i:i + 1])[0] for i in range(Q.shape[0])])


@pytest.mark.timeout(300)
def test_a_matmul_solution_passes(capsys):
    assert str(ck.check_intra_chunk(good, min_speedup=1.0)).startswith("Exercise 8.6 passed")
    assert "2 matrix products for a whole stack" in capsys.readouterr().out


@pytest.mark.timeout(300)
@pytest.mark.parametrize("student, reason", [(exp_alone, "NaN or inf"), (elementwise, "0 matrix product"),
                                             (per_chunk, "must not grow")])
def test_wrong_solutions_fail_with_their_reason(student, reason):
    with pytest.raises(ExerciseFailed, match=reason):
        ck.check_intra_chunk(student, min_speedup=1.0)


def test_the_scan_reference_computes_the_same_numbers():
    case = ck._cases()[2].kwargs
    np.testing.assert_allclose(ck.scan_reference(**case), ck._reference(**case), rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- issue 29: gamed timers
def test_a_matmul_solution_passes_twice_on_the_fake_clock(fake_clock, capsys):
    fake_clock.cost(course_scan=10e-3, yours=1e-3)
    for _ in range(2):
        assert str(ck.check_intra_chunk(good)) == "Exercise 8.6 passed: 5/5 cases"


def test_a_cached_answer_while_timed_is_a_gamed_timer(fake_clock):
    cache = {}

    def cached(Q, K, V, G):
        if Q.shape == (64, 64, 64):
            return cache.setdefault("O", good(Q, K, V, G))
        return good(Q, K, V, G)

    fake_clock.cost(course_scan=10e-3, yours=1e-3)
    with pytest.raises(ExerciseFailed, match=r"Exercise 8.6 failed on the speed test \(64 chunks of 64 steps, d = 64, "
                                             r"float32, timed call \d+\):\n  gamed timer"):
        ck.check_intra_chunk(cached)


def test_too_slow_fails_even_on_a_busy_machine(fake_clock, busy_machine):
    fake_clock.cost(course_scan=1e-3, yours=2e-3)
    with pytest.raises(ExerciseFailed, match=r"(?s)only 0.50x as fast as the element-wise scan.*the whole interval "
                                             r"lies below the bar"):
        ck.check_intra_chunk(good, retries=1)


def test_changing_an_input_is_named():
    def clobbers(Q, K, V, G):
        out = good(Q, K, V, G)
        G -= G[:, :1]
        return out

    with pytest.raises(ExerciseFailed, match=r"Exercise 8.6 failed on case 1/5 .*\n  your function changed its input G "
                                             r"in place"):
        ck.check_intra_chunk(clobbers)


def with_course_mask(Q, K, V, G):
    """Right numbers and products, but the mask -- the numerics 8.6 teaches -- is the course's decay_mask."""
    from course_lib.algorithms import linear_attention as la

    return ((Q @ K.transpose(0, 2, 1)) * la.decay_mask(G, Q.dtype)) @ V


def test_the_course_decay_mask_is_a_shortcut():
    """Issue 39, item 1: the exercise is the mask from differences; the course's mask skips it."""
    with pytest.raises(ExerciseFailed, match=r"(?s)calls linear_attention\.decay_mask, the course's own answer"):
        ck.check_intra_chunk(with_course_mask)
