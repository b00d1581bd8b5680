# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# > **Your worksheet.** Replace each `raise NotImplementedError(...)` with your code, then run the check cell below it: it says *exactly* what is wrong, or prints `Exercise N.k passed`.
# > This file was generated from `solutions/01_serial_rnn.ipynb` by `python -m course_lib exercises build`; rebuilding never overwrites your work without `--force` (which keeps a backup).

# %% [markdown]
# # Worksheet 01 · The serial RNN
#
# You will write the pieces of the seed's RNN yourself: one time step, the whole forward pass,
# the loss and a numerical gradient. Row vectors and time-major arrays throughout:
# `X (T, B, nx)`, `h (B, nh)`, `Wxh (nx, nh)`, `Whh (nh, nh)`, `Why (nh, ny)`.
# Each check compares your function with `course_lib.models.rnn` on several seeded cases.

# %%
import numpy as np

from course_lib.models import rnn
from course_lib.teaching.checks import serial_rnn as serial_rnn_checks

# %% [markdown]
# ## Exercise 1.1 · One forward step
#
# $h_t = \tanh(x_t W_{xh} + h_{t-1} W_{hh})$ for a batch: `x_t (B, nx)`, `h_prev (B, nh)` -> `(B, nh)`.

# %% tags=["solution", "raises-exception"]
def forward_step(x_t, h_prev, Wxh, Whh):
    """One RNN step for a batch of row vectors."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 1.1: replace this line with your code")

# %% tags=["raises-exception"]
serial_rnn_checks.check_forward_step(forward_step)

# %% [markdown]
# ## Exercise 1.2 · The forward pass
#
# Run the RNN over a whole sequence, starting from `h0 (B, nh)`. Return `H (T, B, nh)` with
# `H[t]` the state *after* reading `X[t]`, and `Yhat (T, B, ny)` with `Yhat[t] = tanh(H[t] @ Why)`.
# `params` has the fields `Wxh`, `Whh`, `Why`.

# %% tags=["solution", "raises-exception"]
def forward(params, X, h0):
    """(H, Yhat) of the RNN over X (T, B, nx)."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 1.2: replace this line with your code")

# %% tags=["raises-exception"]
serial_rnn_checks.check_forward(forward)

# %% [markdown]
# ## Exercise 1.3 · The loss
#
# The seed's loss is a **sum** of squared errors over time steps, sequences and outputs:
# $E = \sum_t \sum (\hat y_t - y_t)^2$. Return one Python float.

# %% tags=["solution", "raises-exception"]
def loss(Yhat, Y):
    """Sum of squared errors."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 1.3: replace this line with your code")

# %% tags=["raises-exception"]
serial_rnn_checks.check_loss(loss)

# %% [markdown]
# ## Exercise 1.4 · A numerical gradient
#
# Central differences: for every entry $W_i$, evaluate `f` at $W_i + \varepsilon$ and at
# $W_i - \varepsilon$, and divide the difference by $2\varepsilon$. Change `W` in place one entry
# at a time (so that a function closing over `W` sees the change) and **put each entry back**
# afterwards. `W` is float64. Return an array of the shape of `W`. Besides the numbers, the check tries
# a function that reads `W` through a closure (a perturbed copy gives it a zero gradient) and two values
# of `eps` (a central difference's error shrinks 4x when `eps` halves; an `eps` ignored is named).

# %% tags=["solution", "raises-exception"]
def numerical_gradient(f, W, eps=1e-6):
    """d f / d W by central differences."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 1.4: replace this line with your code")

# %% tags=["raises-exception"]
serial_rnn_checks.check_numerical_gradient(numerical_gradient)

# %% [markdown]
# ## Putting it together
#
# With the library's versions (so this runs before you have solved anything): the gradient of the
# loss with respect to `Whh`, numerically and from backpropagation (chapter 02), on a small float64
# problem. They agree to about 1e-9.

# %%
from course_lib.models import gradcheck

p = rnn.init_params(3, 4, 2, seed=0, dtype=np.float64)
rng = np.random.default_rng(0)
X, Y = rng.uniform(-1, 1, (5, 2, 3)), rng.uniform(-1, 1, (5, 2, 2))
num = gradcheck.numerical_gradient(lambda W: rnn.loss(rnn.forward(rnn.RNNParams(p.Wxh, W, p.Why), X).Yhat, Y), p.Whh.copy())
print("numerical and backprop dWhh agree to 1e-7:", gradcheck.relative_error(num, rnn.bptt_linear(p, X, Y).Whh) < 1e-7)
