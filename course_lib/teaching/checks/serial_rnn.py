"""Checks for worksheet 01 (the serial RNN): forward step, forward pass, loss, numerical gradient."""
from __future__ import annotations

import numpy as np

from ...models import rnn
from .core import Case, ExerciseFailed, check_function, passed

__all__ = ["check_forward_step", "check_forward", "check_loss", "check_numerical_gradient", "random_problem"]


def random_problem(rng: np.random.Generator, T: int, batch: int, nx: int, nh: int, ny: int,
                   dtype=np.float64, with_h0: bool = True):
    """``params, X, Y, h0`` with values in a range where tanh is neither linear nor saturated."""
    params = rnn.init_params(nx, nh, ny, seed=int(rng.integers(0, 2**31)), dtype=dtype)
    X = rng.uniform(-1, 1, (T, batch, nx)).astype(dtype)
    Y = rng.uniform(-0.9, 0.9, (T, batch, ny)).astype(dtype)
    h0 = rng.uniform(-0.5, 0.5, (batch, nh)).astype(dtype) if with_h0 else None
    return params, X, Y, h0


SHAPES = [(1, 1, 2, 3, 2), (4, 2, 3, 5, 2), (6, 3, 4, 4, 3), (5, 1, 2, 6, 1), (8, 4, 5, 7, 4)]


def check_forward_step(student) -> str:
    """Exercise 1.1: ``forward_step(x_t, h_prev, Wxh, Whh) -> h_t``, all row vectors.

    Property: the row-vector step tanh(x_t Wxh + h_prev Whh). Five shapes with nx != nh (a product in the
    column-vector order, or a missing term, is off or fails on shape); ``rnn.forward_step`` is a shortcut."""
    def case(rng, i):
        _, B, nx, nh, _ = SHAPES[i]
        p, X, _, h0 = random_problem(rng, *SHAPES[i])
        return Case(dict(x_t=X[0], h_prev=h0, Wxh=p.Wxh, Whh=p.Whh), label=f"B={B}, nx={nx}, nh={nh}")

    return check_function("1.1", student, rnn.forward_step, case, n_cases=len(SHAPES), output_names=["h_t"],
                          time_axis=None, forbidden={"rnn.forward_step": rnn.forward_step},
                          hint="h_t = tanh(x_t @ Wxh + h_prev @ Whh); rows are samples, so x_t comes first.")


def _forward_ref(params, X, h0):
    c = rnn.forward(params, X, h0)
    return c.H, c.Yhat


def check_forward(student) -> str:
    """Exercise 1.2: ``forward(params, X, h0) -> (H, Yhat)``, both time-major.

    Property: the state carried from step to step from a non-zero ``h0``. Five shapes, T up to 8 (a state not
    carried, or started from zeros, differs from time step 1 or 0 on, and the first differing step is named),
    inputs unchanged; ``rnn.forward`` is a shortcut."""
    def case(rng, i):
        T, B, nx, nh, ny = SHAPES[i]
        p, X, _, h0 = random_problem(rng, *SHAPES[i])
        return Case(dict(params=p, X=X, h0=h0), label=f"T={T}, B={B}, nx={nx}, nh={nh}, ny={ny}")

    return check_function("1.2", student, _forward_ref, case, n_cases=len(SHAPES), output_names=["H", "Yhat"],
                          inputs_unchanged=True, forbidden={"rnn.forward": rnn.forward}, hint="H[t] must be the state *after* reading X[t], starting from h0; "
                               "Yhat[t] = tanh(H[t] @ Why). Wrong from time step 1 on usually means "
                               "h is not carried from one step to the next.")


def check_loss(student) -> str:
    """Exercise 1.3: ``loss(Yhat, Y) -> float``: the seed's *sum* of squared errors.

    Property: a sum, not a mean, as one number. Five shapes of different sizes (a mean is off by their size),
    an array result named; ``rnn.loss`` is a shortcut."""
    def case(rng, i):
        T, B, _, _, ny = SHAPES[i]
        return Case(dict(Yhat=rng.uniform(-1, 1, (T, B, ny)), Y=rng.uniform(-1, 1, (T, B, ny))),
                    label=f"T={T}, B={B}, ny={ny}")

    def wrapped(Yhat, Y):
        out = student(Yhat, Y)
        if np.ndim(out) != 0:
            raise ExerciseFailed(f"Exercise 1.3: expected one number, got an array of shape {np.shape(out)}")
        return float(out)

    line = check_function("1.3", wrapped, rnn.loss, case, n_cases=len(SHAPES), output_names=["E"], quiet=True,
                          hint="E = sum over t, batch and outputs of (Yhat - Y)**2 -- a sum, not a mean.")
    from .shortcuts import check_no_shortcut

    check_no_shortcut("1.3", student, {"rnn.loss": rnn.loss}, np.zeros((2, 1, 1)), np.ones((2, 1, 1)))
    print(line)
    return line


# --------------------------------------------------------------------------- numerical gradient
def _reference_numgrad(f, W, eps=1e-6):
    from ...models.gradcheck import numerical_gradient

    return numerical_gradient(f, W, eps)


def _test_functions():
    return [
        ("sum(W**2)", lambda W: float(np.sum(W ** 2))),
        ("sum(sin(W) * W[::-1])", lambda W: float(np.sum(np.sin(W) * W[::-1]))),
        ("prod(1 + W/4)", lambda W: float(np.prod(1 + W / 4))),
    ]


def check_numerical_gradient(student) -> str:
    """Exercise 1.4: ``numerical_gradient(f, W, eps=1e-6)`` by central differences (float64).

    Property: a *central* difference with the student's ``eps``, perturbing ``W`` itself. Checked on simple
    functions of a matrix, on the RNN loss w.r.t. ``Whh``, and that ``W`` is left unchanged afterwards; then on
    a function that reads ``W`` through a closure (a perturbed copy leaves it unchanged: a zero gradient), and
    with eps = 1e-2 and 5e-3 on sum(sin(W)), whose central difference is exactly cos(W) sin(eps)/eps: a
    one-sided difference (error shrinking 2x, not 4x, when eps halves) and an ``eps`` ignored (the result
    matches cos(W) far better than that eps allows) are named.
    """
    rng = np.random.default_rng(1)
    cases = []
    for name, f in _test_functions():
        W = rng.uniform(-1, 1, (3, 4))
        cases.append((name, f, W))
    p, X, Y, h0 = random_problem(rng, 4, 2, 3, 4, 2)

    def rnn_loss(W):
        q = rnn.RNNParams(p.Wxh, W, p.Why)
        return rnn.loss(rnn.forward(q, X, h0).Yhat, Y)

    cases.append(("the RNN loss E(Whh)", rnn_loss, p.Whh.copy()))
    total = len(cases)
    for i, (name, f, W) in enumerate(cases, start=1):
        expected = _reference_numgrad(f, W.copy())
        mine = W.copy()
        got = student(f, mine, 1e-6)
        if not np.array_equal(mine, W):
            raise ExerciseFailed(
                f"Exercise 1.4 failed on case {i}/{total} ({name}):\n  W was changed by your function "
                f"(max change {np.max(np.abs(mine - W)):.3g}); restore each entry after perturbing it.")
        got = np.asarray(got)
        if got.shape != W.shape:
            raise ExerciseFailed(f"Exercise 1.4 failed on case {i}/{total} ({name}):\n  the gradient has "
                                 f"shape {got.shape}, expected {W.shape} (one entry per entry of W)")
        err = np.abs(got - expected) / np.maximum(np.abs(expected), 1e-3)
        if not np.all(err < 1e-4):
            idx = np.unravel_index(int(np.argmax(err)), err.shape)
            ratio = got[idx] / expected[idx] if expected[idx] != 0 else np.inf
            hint = ("your values are twice too large: divide by 2*eps, not eps" if abs(ratio - 2) < 0.05 else
                    "your values are half too small: divide by 2*eps (the two points are 2*eps apart)"
                    if abs(ratio - 0.5) < 0.05 else
                    "perturb one entry at a time: W[i] + eps and W[i] - eps, with f evaluated at each")
            raise ExerciseFailed(
                f"Exercise 1.4 failed on case {i}/{total} ({name}, W {W.shape}):\n  gradient entry {tuple(int(j) for j in idx)}"
                f" is {got[idx]:.6g}, expected {expected[idx]:.6g} (relative error {err[idx]:.2e})\n  Hint: {hint}")
    _check_closure(student, total)
    _check_second_order(student, total)
    from ...models.gradcheck import numerical_gradient
    from .shortcuts import check_no_shortcut

    check_no_shortcut("1.4", student, {"gradcheck.numerical_gradient": numerical_gradient}, cases[0][1],
                      cases[0][2].copy(), 1e-6)
    return passed("1.4", total, total)


def _check_closure(student, total: int) -> None:
    """The statement: change ``W`` in place, so that a function closing over ``W`` sees the change. ``f`` here
    ignores its argument and reads the matrix it closed over (as the worksheet's loss of the RNN does)."""
    W = np.linspace(-1.0, 1.1, 12).reshape(3, 4)
    f = lambda _ignored: float(np.sum(np.sin(W) * W[::-1]))  # noqa: E731
    expected = _reference_numgrad(f, W)
    got = np.asarray(student(f, W, 1e-6), dtype=float)
    if got.shape == W.shape and np.allclose(got, expected, rtol=1e-4, atol=1e-6):
        return
    zero = got.shape == W.shape and np.all(np.abs(got) < 1e-9)
    raise ExerciseFailed(
        f"Exercise 1.4 failed on case {total + 1}/{total + 2} (f reads W through a closure, not its argument):\n"
        + ("  your gradient is 0 everywhere: f never saw your perturbation -- you changed a copy of W, not W itself"
           if zero else f"  your gradient differs from the central difference (max |difference| "
                        f"{np.max(np.abs(got - expected)) if got.shape == W.shape else float('nan'):.3g})")
        + "\n  Hint: change W in place (old = W[idx]; W[idx] = old + eps; f(W) ...) and put W[idx] = old back.")


def _check_second_order(student, total: int) -> None:
    """Central differences are exact to O(eps²), one-sided ones only to O(eps): with eps = 1e-2 on
    sum(sin(W)) (exact gradient cos(W)) the first is off by ~eps²/6 relative, the second by ~eps/2."""
    W = np.linspace(-1.2, 1.3, 12).reshape(3, 4)
    exact = np.cos(W)
    f = lambda V: float(np.sum(np.sin(V)))  # noqa: E731
    errs = []
    for eps in (1e-2, 5e-3):
        got = np.asarray(student(f, W.copy(), eps), dtype=float)
        errs.append(float(np.max(np.abs(got - exact) / np.abs(exact))))
    shrink = errs[0] / max(errs[1], 1e-300)
    if errs[0] > 1e-4:
        kind = ("a one-sided difference (f(W+eps) - f(W)) / eps: its error shrinks only like eps"
                if 1.6 < shrink < 2.5 else "not a central difference")
        raise ExerciseFailed(
            f"Exercise 1.4 failed on case {total + 2}/{total + 2} (sum(sin(W)) with eps = 1e-2, exact gradient cos(W)):\n"
            f"  relative error {errs[0]:.1e} at eps = 1e-2 and {errs[1]:.1e} at eps = 5e-3 (shrinks {shrink:.1f}x when "
            f"eps halves; a central difference shrinks 4x) -- this looks like {kind}.\n"
            "  Hint: (f(W + eps) - f(W - eps)) / (2 eps) is exact up to O(eps²).")
    # sin(w + eps) - sin(w - eps) = 2 cos(w) sin(eps): the central difference at eps is cos(W) sin(eps) / eps
    # exactly (up to rounding, ~1e-13 here); an eps ignored (1e-6 instead of 1e-2) lands on cos(W) itself
    eps = 1e-2
    central = exact * np.sin(eps) / eps
    got = np.asarray(student(f, W.copy(), eps), dtype=float)
    off = float(np.max(np.abs(got - central) / np.abs(central)))
    if off > 1e-7:
        closer = float(np.max(np.abs(got - exact) / np.abs(exact))) < off / 10
        raise ExerciseFailed(
            f"Exercise 1.4 failed on case {total + 2}/{total + 2} (sum(sin(W)) with eps = 1e-2):\n"
            f"  a central difference with eps = 1e-2 gives exactly cos(W) sin(eps)/eps (relative error ~eps²/6 = "
            f"1.7e-05 to cos(W)); yours is {off:.1e} away from it"
            + (" and closer to cos(W) itself: your function ignores its eps argument" if closer else "")
            + ".\n  Hint: perturb by the eps you are given: W[idx] = old + eps, W[idx] = old - eps, divide by 2*eps.")
