"""The one parameter protocol (course_lib.core.params.Params), checked on every params class the
library has -- found by walking course_lib.models and course_lib.parallel, not listed by hand -- and
every model's backward returning its own params class with the parameters' shapes."""
import dataclasses
import importlib
import pkgutil

import numpy as np
import pytest

import course_lib
import course_lib.models
import course_lib.parallel
from course_lib.core.optim import Adam
from course_lib.core.params import Params
from course_lib.models import diag_gru, gru, linear_rnn, lstm, lstm_lm, mingru, para_lstm, rnn, softmax_rnn
from course_lib.models import charlm
from course_lib.parallel import deer


def _modules(pkg):
    for info in pkgutil.iter_modules(pkg.__path__, pkg.__name__ + "."):
        try:
            yield importlib.import_module(info.name)
        except ImportError:  # an optional dependency (mpi4py, halide) is missing here
            continue


def _all_subclasses(cls):
    out = set()
    for sub in cls.__subclasses__():
        out |= {sub} | _all_subclasses(sub)
    return out


def _discovered():
    found = set()
    for mod in [*_modules(course_lib.models), *_modules(course_lib.parallel)]:
        for obj in vars(mod).values():
            if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__name__.endswith("Params") \
                    and obj.__module__.startswith("course_lib."):
                found.add(obj)
    found |= {c for c in _all_subclasses(Params) if c.__module__.startswith("course_lib.")}
    return found


# one example per class (nx=3, nh=4) -- a class without one fails test_every_class_has_an_example
def _examples():
    lp = linear_rnn.init_params("qrnn", 3, 4, k=2, seed=0)
    sm = softmax_rnn.init_params(3, 4, 5, layers=2, seed=0, dtype=np.float64)
    return {
        rnn.RNNParams: rnn.init_params(3, 4, 2, seed=0, dtype=np.float64),
        lstm.LSTMParams: lstm.init_params(3, 4, seed=0, dtype=np.float64),
        lstm_lm.LMParams: lstm_lm.init_lm(3, 4, seed=0, dtype=np.float64),
        gru.GRUParams: gru.init_params(3, 4, seed=0, dtype=np.float64),
        gru.GRUClassifierParams: gru.init_classifier(3, 4, 2, seed=0, dtype=np.float64),
        diag_gru.DiagGRUParams: diag_gru.init_params(3, 4, seed=0),
        para_lstm.ParaLSTMParams: para_lstm.init_params(3, 4, seed=0),
        mingru.MinGRUParams: mingru.init_params("mingru", 3, 4, seed=0),
        mingru.MinLSTMParams: mingru.init_params("minlstm", 3, 4, seed=0),
        linear_rnn.GILRParams: linear_rnn.init_params("gilr_lstm", 3, 4, seed=0),
        linear_rnn.SRUParams: linear_rnn.init_params("sru", 3, 4, seed=0),
        linear_rnn.QRNNParams: lp,
        linear_rnn.SerialLSTMParams: linear_rnn.init_params("lstm", 3, 4, seed=0),
        linear_rnn.ClassifierParams: linear_rnn.ClassifierParams(lp, np.ones(4), np.zeros(1)),
        softmax_rnn.SoftmaxRNNParams: sm,
        softmax_rnn.Layer: sm.layers[0],
    }


EXAMPLES = _examples()
CLASSES = sorted(_discovered(), key=lambda c: (c.__module__, c.__name__))


def test_discovery_finds_the_known_classes():
    names = {c.__name__ for c in CLASSES}
    assert {"RNNParams", "LSTMParams", "LMParams", "GRUParams", "GRUClassifierParams", "MinGRUParams",
            "MinLSTMParams", "GILRParams", "SRUParams", "QRNNParams", "SerialLSTMParams", "ClassifierParams",
            "SoftmaxRNNParams", "Layer"} <= names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_class_follows_the_protocol(cls):
    if not dataclasses.is_dataclass(cls) or cls.__name__.startswith("_"):
        pytest.skip("a shared base, not a params class itself")
    assert issubclass(cls, Params), f"{cls.__name__} does not derive from core.params.Params"
    assert cls in EXAMPLES, f"no example for {cls.__name__}: add one to _examples()"


@pytest.mark.parametrize("cls", list(EXAMPLES), ids=lambda c: c.__name__)
def test_protocol(cls):
    p = EXAMPLES[cls]
    names, arrays = p.names(), p.arrays()
    assert len(names) == len(arrays) == len(set(names)) > 0
    assert all(isinstance(a, np.ndarray) for a in arrays)
    # names() matches arrays(): a name's path leads to that very array
    for n, a in zip(names, arrays):
        obj = p
        for part in n.split("."):
            obj = obj[int(part)] if part.isdigit() else getattr(obj, part)
        assert obj is a, n
    assert (p.nx, p.nh) == (3, 4)
    assert p.dtype == arrays[0].dtype == np.float64
    # copy: same values, new arrays, same class and non-array fields
    q = p.copy()
    assert type(q) is cls and q.names() == names
    for a, b in zip(arrays, q.arrays()):
        assert a is not b and not np.shares_memory(a, b)
        np.testing.assert_array_equal(a, b)
    q.arrays()[0][...] += 1.0
    assert not np.array_equal(q.arrays()[0], arrays[0])
    # astype: every array in the new dtype, values kept, original untouched
    r = p.astype(np.float32)
    assert type(r) is cls and all(a.dtype == np.float32 for a in r.arrays()) and p.dtype == np.float64
    for a, b in zip(arrays, r.arrays()):
        np.testing.assert_allclose(b, a, rtol=1e-6)
    # zeros_like: zeros with the same names and shapes
    z = p.zeros_like()
    assert type(z) is cls and z.names() == names
    assert [a.shape for a in z.arrays()] == [a.shape for a in arrays]
    assert all(a.dtype == b.dtype and not a.any() for a, b in zip(z.arrays(), arrays))
    for k in ("k",):  # non-array fields survive (the QRNN's window)
        if hasattr(p, k):
            assert getattr(q, k) == getattr(z, k) == getattr(p, k)


@pytest.mark.parametrize("cls", list(EXAMPLES), ids=lambda c: c.__name__)
@pytest.mark.parametrize("dtype", [np.int32, "float16", "banana", object])
def test_astype_refuses_non_float_dtypes(cls, dtype):
    with pytest.raises(TypeError, match="^dtype: expected float32 or float64"):
        EXAMPLES[cls].astype(dtype)


def test_adam_takes_arrays_not_params():
    p = gru.init_params(3, 4, seed=0)
    with pytest.raises(TypeError, match=r"^params: .*GRUParams.arrays\(\)"):
        Adam(p, 0.1)
    opt = Adam(p.arrays(), 0.1)
    with pytest.raises(TypeError, match=r"^grads: .*GRUParams.arrays\(\)"):
        opt.step(p.zeros_like())
    before = p.copy()
    opt.step(p.zeros_like().arrays())
    np.testing.assert_array_equal(p.W_hh, before.W_hh)  # zero gradient: no move


# --------------------------------------------------------------------------- backward -> own class
def _same_structure(g, p):
    assert type(g) is type(p)
    assert g.names() == p.names()
    assert [a.shape for a in g.arrays()] == [a.shape for a in p.arrays()]


def test_rnn_bptt_returns_rnnparams():
    p = EXAMPLES[rnn.RNNParams]
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((5, 2, 3)), rng.standard_normal((5, 2, 2))
    for fn in (rnn.bptt_linear, rnn.bptt_quadratic):
        _same_structure(fn(p, X, Y), p)


def test_lstm_backward_returns_lstmparams_then_input_grads():
    p = EXAMPLES[lstm.LSTMParams]
    X = np.random.default_rng(0).standard_normal((5, 2, 3))
    for method in lstm.METHODS:
        H, _, cache = lstm.lstm_forward(p, X, method=method, return_cache=True)
        g, dX, dh0, dc0 = lstm.lstm_backward(p, cache, np.ones_like(H))
        _same_structure(g, p)
        assert dX.shape == X.shape and dh0.shape == dc0.shape == (2, 4)


def test_lm_grads_are_lmparams():
    p = EXAMPLES[lstm_lm.LMParams]
    ids = np.array([[0, 1], [2, 0], [1, 1]])
    _, g = lstm_lm.lm_loss_and_grads(p, ids, ids[::-1])
    _same_structure(g, p)
    _same_structure(g.lstm, p.lstm)


def test_gru_backward_and_deer_gradient_return_gruparams():
    p = EXAMPLES[gru.GRUParams]
    rng = np.random.default_rng(0)
    X, dH = rng.standard_normal((6, 2, 3)), rng.standard_normal((6, 2, 4))
    g, dh0 = gru.gru_backward(p, X, gru.gru_forward(p, X), dH)
    _same_structure(g, p)
    gd, dh0d = deer.gru_gradient(p, X, dH)
    _same_structure(gd, p)
    assert dh0.shape == dh0d.shape == (2, 4)
    c = EXAMPLES[gru.GRUClassifierParams]
    _, gc = gru.classifier_loss(c, X, np.array([0, 1]))
    _same_structure(gc, c)


@pytest.mark.parametrize("kind", mingru.KINDS)
def test_mingru_grads_are_its_params(kind):
    p = mingru.init_params(kind, 3, 4, seed=0)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((6, 2, 3))
    Hs = mingru.forward(kind, p, X)
    g, dh0 = mingru.backward(kind, p, X, Hs, np.ones_like(Hs))
    _same_structure(g, p)
    assert not g.W_out.any() and not g.b_out.any()  # the states do not depend on the head
    _, _, g2 = mingru.loss_and_grads(kind, p, X, np.array([0, 1]))
    _same_structure(g2, p)


@pytest.mark.parametrize("layer", linear_rnn.LAYERS)
def test_linear_rnn_backward_returns_its_params(layer):
    p = linear_rnn.init_params(layer, 3, 4, seed=0)
    X = np.random.default_rng(0).standard_normal((6, 2, 3))
    Hs, cache = linear_rnn.forward(p, X)
    g, dX = linear_rnn.backward(p, cache, np.ones_like(Hs))
    _same_structure(g, p)
    assert dX.shape == X.shape


def test_charlm_grads_are_softmax_rnn_params():
    p = softmax_rnn.init_params(5, 4, 5, layers=2, seed=0, dtype=np.float64)  # a character model: nx = vocab
    ids = np.array([[0, 1], [2, 4], [3, 3]])
    _, g = charlm.loss_and_grads(p, ids, ids[::-1])
    _same_structure(g, p)
    assert g.names()[:3] == ["layers.0.U", "layers.0.W", "layers.0.b"] and g.names()[-2:] == ["V", "c"]


def test_graders_compare_params_by_name():
    from course_lib.teaching.checks.core import compare_outputs

    p = EXAMPLES[softmax_rnn.SoftmaxRNNParams]
    assert compare_outputs(p.copy(), p, name="grads") is None
    q = p.copy()
    q.layers[1].W[0, 0] += 1.0
    msg = compare_outputs(q, p, name="grads", time_axis=None)
    assert msg is not None and "grads.layers.1.W" in msg


@pytest.mark.parametrize("method", ["sequential", "quasi"])
def test_diag_gru_backward_returns_diaggruparams(method):
    p = diag_gru.init_params(3, 4, seed=0)
    X = np.random.default_rng(0).standard_normal((5, 2, 3))
    Hs = diag_gru.forward(p, X, method="sequential")
    grads, dh0 = diag_gru.backward(p, X, Hs, np.ones_like(Hs), method=method)
    assert type(grads) is diag_gru.DiagGRUParams and grads.names() == p.names()
    assert [g.shape for g in grads.arrays()] == [a.shape for a in p.arrays()] and dh0.shape == (2, 4)
    _, _, g2 = diag_gru.loss_and_grads(p, X, np.zeros(2, dtype=int))
    assert type(g2) is diag_gru.DiagGRUParams
