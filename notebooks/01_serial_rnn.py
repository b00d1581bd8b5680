# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 01 · The serial RNN
#
# Before making anything fast we need the thing itself: the plain recurrent network of the seed
# paper (Han & Uboweja, *Parallel Training of Recurrent Neural Networks*, §2), its loss, the
# image-rotation task it is trained on, and a way to **trust** its gradients.
#
# The network has an input layer of $n_x$ units, a hidden layer of $n_h$ and an output layer of
# $n_y$, and no biases (the seed leaves them out too). With row vectors -- one row per sequence in
# a batch -- one time step is
#
# $$h_t = \tanh(x_t W_{xh} + h_{t-1} W_{hh}), \qquad \hat y_t = \tanh(h_t W_{hy}),$$
#
# with $W_{xh}\in\mathbb{R}^{n_x\times n_h}$, $W_{hh}\in\mathbb{R}^{n_h\times n_h}$,
# $W_{hy}\in\mathbb{R}^{n_h\times n_y}$ (`Wxh`, `Whh`, `Why` in the code), and the loss is the
# seed's sum of squared errors over all steps: $E = \sum_t \sum (\hat y_t - y_t)^2$.
#
# Everything here lives in [`course_lib/models/rnn.py`](../course_lib/models/rnn.py) -- open it: it is short.
# Arrays are **time-major**: `X` is `(T, B, nx)`.

# %%
import numpy as np
import matplotlib.pyplot as plt

import course_lib
from course_lib.models import rnn, gradcheck
from course_lib.data import rotation
from course_lib.core import timing
from course_lib.teaching.plots import rnn as rnn_plots

# %% [markdown]
# ## One forward pass, drawn step by step
#
# A tiny network -- 2 inputs, 3 hidden units, 2 outputs -- reading a sequence of 4 steps,
# counted $t = 1 \dots 4$ as in the seed (the arrays are indexed from 0, so step $t$ is `X[t-1]`). The
# state starts at $h_0 = 0$; each step mixes the new input with the previous state. The arrows
# pointing right are the problem this whole course is about: step $t$ cannot start before step
# $t-1$ has finished.

# %%
tiny = rnn.init_params(nx=2, nh=3, ny=2, seed=0)
x_seq = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 0.5]], dtype=np.float32)[:, None, :]  # (T=4, B=1, nx=2)
cache = rnn.forward(tiny, x_seq)
print("X", x_seq.shape, "-> H", cache.H.shape, "Yhat", cache.Yhat.shape)
h = np.zeros((1, 3), np.float32)
for t in range(1, 5):
    h = rnn.forward_step(x_seq[t - 1], h, tiny.Wxh, tiny.Whh)
    print(f"t={t}: h_{t} = {np.round(h[0], 3)}   (same as forward's H[{t - 1}]: {np.allclose(h, cache.H[t - 1])})")

# %%
rnn_plots.unrolled_rnn(x_seq[:, 0], cache.H[:, 0], cache.Yhat[:, 0])
plt.show()

# %% [markdown]
# `rnn.forward` does exactly this loop, with one difference worth noticing already: the input
# projections $x_t W_{xh}$ of **all** steps do not depend on the state, so it computes them in one
# matrix product of shape `(T*B, nx) @ (nx, nh)` before the loop, and the outputs of all steps in
# one product after it. Only $h_{t-1} W_{hh}$ stays inside the sequential loop.
#
# Its initial weights are drawn with variance $1/\text{fan-in}$ (`rnn.init_params` explains why):
# the pre-activations start with a variance near 1, so `tanh` is neither saturated nor linear.

# %% [markdown]
# ## The task: rotate an image by 10°
#
# The seed trains the RNN on CIFAR-10 pictures (grayscale, flattened): the input at step $t$ is
# the image rotated $t$ times by 10° anti-clockwise, the target is the next rotation,
# $y_t = x_{t+1}$. CIFAR-10 is a download, so this notebook uses small pictures drawn in code
# (`rotation.shape_images`, 12 by 12 pixels = 144 features); `rotation.load_cifar10(path)` reads the real data set
# from a folder you downloaded yourself, grayscale and truncated to 1000 features as in the seed.
# The seed's task, from the claims registry:

# %%
from course_lib.teaching import claims

print(claims.show("000.task.angle", "000.task.features"))

# %%
SIZE, T, ANGLE, NH = 12, 6, 10.0, 144
train_images = rotation.shape_images(64, SIZE, seed=1)
test_images = rotation.shape_images(8, SIZE, seed=2)
X, Y = rotation.rotation_sequences(train_images, T, ANGLE)
X_test, Y_test = rotation.rotation_sequences(test_images, T, ANGLE)
print("X", X.shape, X.dtype, " Y", Y.shape, f" pixel range {X.min():.2f} to {X.max():.2f}")
print("Y[t] == X[t+1]:", np.array_equal(Y[:-1], X[1:]))

# %%
rnn_plots.image_strips({f"seq {b}: x_t": X[:, b] for b in range(3)} | {"seq 0: y_t": Y[:, 0]},
                       (SIZE, SIZE), title="inputs x_t (rotated t·10°) and targets y_t = x_(t+1)")
plt.show()

# %% [markdown]
# The same task can be built from any grayscale pictures. `rotation.sample_images` cuts patches out of
# the photo that ships inside matplotlib; with CIFAR-10 on disk (not needed here) it would be
#
# ```python
# images = rotation.load_cifar10("~/data/cifar-10-batches-py", n_features=1024).reshape(-1, 32, 32)
# X, Y = rotation.rotation_sequences(images[:1000], T=10, n_features=1000)   # the seed's 1000 features
# ```

# %%
photo = rotation.sample_images(2, SIZE, seed=0)
Xp, _ = rotation.rotation_sequences(photo, T, ANGLE)
rnn_plots.image_strips({"photo patch 0": Xp[:, 0], "photo patch 1": Xp[:, 1]}, (SIZE, SIZE),
                       title="the rotation task on patches of matplotlib's sample photo")
plt.show()

# %% [markdown]
# A useful yardstick before training: a model that simply **copies** its input ($\hat y_t = x_t$)
# already gets the pixels that do not move right. The RNN has to beat that to have learned
# anything about rotation.

# %%
copy_loss = rnn.loss(X_test, Y_test) / X_test.shape[1]
params = rnn.init_params(nx=SIZE * SIZE, nh=NH, ny=SIZE * SIZE, seed=0)  # nh = nx, as in the seed (1000 = 1000)
start_loss = rnn.loss(rnn.predict(params, X_test), Y_test) / X_test.shape[1]
print(f"test loss per sequence: copy-the-input {copy_loss:.2f}, untrained RNN {start_loss:.2f}")

# %% [markdown]
# ## Training
#
# `rnn.train` runs mini-batch SGD: each epoch shuffles the 64 training sequences, takes a step per
# mini-batch of 8 with the gradient of the loss per sequence (computed by backpropagation through
# time, `rnn.bptt_linear` -- chapter 02 is about it), and shows a progress bar. If the learning
# rate is too large the loss blows up, and `train` stops with a message instead of returning NaNs.

# %% tags=["nbval-ignore-output"]
result = rnn.train(params, X, Y, epochs=40, lr=1e-2, batch=8, seed=0)

# %%
trained = result.params
test_loss = rnn.loss(rnn.predict(trained, X_test), Y_test) / X_test.shape[1]
print(f"training loss per sequence: {result.history['loss'][0]:.1f} -> {result.history['loss'][-1]:.1f}")
print(f"test loss per sequence: {test_loss:.1f} (copy-the-input {copy_loss:.1f}); beats copying: {test_loss < copy_loss}")

# %%
ax = rnn_plots.loss_curve(result.history["loss"], baseline=rnn.loss(X, Y) / X.shape[1], baseline_label="copy the input (train)")
ax.set_title(f"training loss, {X.shape[1]} sequences of {T} steps, nh = {NH}")
plt.show()

# %% [markdown]
# What a too-large learning rate looks like -- the error is raised, not hidden:

# %%
try:
    rnn.train(params, X, Y, epochs=5, lr=1.0, batch=8, seed=0, progress=False)
except rnn.TrainingDiverged as err:
    print("TrainingDiverged:", err)

# %% [markdown]
# ## Predicted vs true rotations
#
# Test pictures the network never saw. The network is small and trained for a few seconds, so
# the predictions are blurry -- but the shapes turn.

# %%
pred = rnn.predict(trained, X_test)
rnn_plots.image_strips({"input x_t": X_test[:, 0], "target y_t": Y_test[:, 0], "RNN ŷ_t": np.clip(pred[:, 0], 0, 1),
                        "input x_t ": X_test[:, 3], "target y_t ": Y_test[:, 3], "RNN ŷ_t ": np.clip(pred[:, 3], 0, 1)},
                       (SIZE, SIZE), title="held-out sequences: input, target and prediction")
plt.show()

# %% [markdown]
# ## Can we trust the gradient? A numerical check
#
# Training used gradients from a hand-written backward pass. A classic way to test one: nudge each
# weight by $\pm\varepsilon$ and look at the change of the loss,
#
# $$\frac{\partial E}{\partial W_{ij}} \approx \frac{E(W + \varepsilon e_{ij}) - E(W - \varepsilon e_{ij})}{2\varepsilon},$$
#
# exact up to $O(\varepsilon^2)$. It needs two forward passes per weight, so it is only for small
# networks, and it must run in **float64**: in float32 the difference of two nearly equal losses
# keeps only a few correct digits. `course_lib.models.gradcheck` does it.

# %%
small = rnn.init_params(nx=4, nh=5, ny=3, seed=3, dtype=np.float64)
rng = np.random.default_rng(0)
Xs = rng.uniform(-1, 1, (6, 2, 4))
Ys = rng.uniform(-1, 1, (6, 2, 3))
analytic = rnn.bptt_linear(small, Xs, Ys)
numeric = gradcheck.rnn_numerical_gradients(small, Xs, Ys)
errors = gradcheck.gradient_errors(analytic, numeric)
for name, err in errors.items():
    print(f"d{name}: relative error below 1e-7: {err < 1e-7}")

# %% [markdown]
# And what a bug looks like: a backward pass that forgets to carry the error from step $t+1$ back to
# step $t$. The worksheet checks compare per time step, so they can say **which** gradient is wrong
# and **where** it starts to go wrong:

# %%
from course_lib.teaching.checks import bptt as bptt_checks

def forgetful_bptt(params, X, Y, h0=None):
    c = rnn.forward(params, X, h0)
    dO = rnn.output_error(c.Yhat, Y)
    g = rnn.RNNParams(*(np.zeros_like(w) for w in (params.Wxh, params.Whh, params.Why)))
    for t in reversed(range(X.shape[0])):
        dpre = (dO[t] @ params.Why.T) * (1 - c.H[t] ** 2)     # bug: dh_next from step t+1 is never added
        g.Why += c.H[t].T @ dO[t]
        g.Wxh += X[t].T @ dpre
        g.Whh += c.H_prev[t].T @ dpre
    return g

print(bptt_checks.diagnose_gradients(forgetful_bptt, rnn.bptt_linear, small, Xs, Ys))

# %% tags=["nbval-ignore-output"]
print("largest relative error of the three gradients:", f"{max(errors.values()):.1e}")

# %% [markdown]
# ## How long does one training step take?
#
# A first measurement for the chapters to come: one gradient computation on the whole training set,
# and the share of this machine's GEMM peak (measured in the same process) that it reaches.
# **Predict first:** the matrices here are 144 wide and the loop over time runs in Python -- near the
# peak, or far below it?

# %% tags=["nbval-ignore-output"]
t = timing.measure(rnn.bptt_linear, trained, X, Y, repeat=5)
flops = rnn.bptt_flops(T, X.shape[1], SIZE * SIZE, NH, SIZE * SIZE)
rate = flops / t.median / 1e9
print(f"one gradient (T={T}, B={X.shape[1]}, nx=ny={SIZE * SIZE}, nh={NH}): {t}")
peak = timing.peak_gflops()
share = rate / peak
print(f"{flops / 1e6:.1f} MFLOP of GEMMs -> {rate:.2f} GFLOP/s = {100 * share:.1f}% of this machine's GEMM peak ({peak:.0f} GFLOP/s)")
if not t.noise.ok:
    print(t.noise.warning())
elif share < 0.25:
    print(f"Far below the peak: {T} small GEMMs per pass, each {X.shape[1]}x{NH} -- Python and call overhead, "
          "not arithmetic, set the pace. Chapters 03-05 are about closing this gap.")
else:
    print("Closer to the peak than expected for matrices this small: this machine's BLAS handles small GEMMs well.")

# %% [markdown]
# ## What we learned
#
# * The RNN is three matrix products and two `tanh`s per step; only $h_{t-1} W_{hh}$ is truly
#   sequential -- the input and output projections of all steps can be batched into single GEMMs.
# * The seed's rotation task, built from pictures made in code, is learnable by a small RNN: the
#   printed test loss says whether it beats "copy the input" on pictures it never saw.
# * Central differences in float64 confirm the hand-written gradients (the printed relative errors);
#   a wrong backward pass is caught with the gradient and the time step where it goes wrong.
#
# Worksheet: [exercises/01_serial_rnn.ipynb](../exercises/01_serial_rnn.ipynb).
# Next: [02 · BPTT from O(N²) to O(N)](02_bptt.ipynb) -- how those gradients are computed, and why
# one way is quadratic in the sequence length.
