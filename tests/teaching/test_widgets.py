import matplotlib

matplotlib.use("Agg")

import ipywidgets as W
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.teaching import widgets
from helpers import raises_naming


def test_within_budget_is_a_plain_function():
    assert widgets.within_budget({"n": 10}, None, None) == (True, None)
    assert widgets.within_budget({"n": 10}, lambda n: n**3, 2000) == (True, 1000.0)
    assert widgets.within_budget({"n": 20}, lambda n: n**3, 2000) == (False, 8000.0)


def test_make_control_shorthands():
    assert isinstance(widgets.make_control("n", (1, 10, 1, 5)), W.IntSlider)
    assert not widgets.make_control("n", (1, 10, 1, 5)).disabled
    fixed = widgets.make_control("threads", (1, 1, 1, 1))          # one core: one value, shown fixed
    assert isinstance(fixed, W.IntSlider) and fixed.disabled and fixed.value == 1
    s = widgets.make_control("lr", (0.0, 1.0, 0.1, 0.5))
    assert isinstance(s, W.FloatSlider) and s.value == 0.5
    d = widgets.make_control("method", ["serial", "batched"])
    assert isinstance(d, W.Dropdown) and d.value == "serial"
    assert isinstance(widgets.make_control("on", True), W.Checkbox)
    own = W.IntText(value=3)
    assert widgets.make_control("x", own) is own and own.description == "x"
    with pytest.raises(ValueError, match=r"controls\['n'\]: expected a widget"):
        widgets.make_control("n", 3)


def test_panel_recomputes_when_a_control_moves():
    calls = []

    def compute(n, method):
        calls.append((n, method))
        return {"n": n, "method": method}

    def render(data, ax):
        ax.plot([0, data["n"]])
        return f"n={data['n']} {data['method']}"

    panel = widgets.sweep_panel(compute, {"n": (1, 10, 1, 2), "method": ["a", "b"]}, render=render)
    assert calls == [(2, "a")]
    panel.controls["n"].value = 7
    panel.controls["method"].value = "b"
    assert calls == [(2, "a"), (7, "a"), (7, "b")]


def test_panel_caps_work():
    calls = []
    panel = widgets.sweep_panel(lambda n: calls.append(n), {"n": (1, 100, 1, 5)},
                                cost=lambda n: n, max_cost=50)
    panel.controls["n"].value = 80
    assert calls == [5]  # the expensive setting was refused, not computed
    panel.controls["n"].value = 40
    assert calls == [5, 40]


def test_panel_bad_input():
    with pytest.raises(TypeError, match="compute: expected a callable"):
        widgets.sweep_panel(3, {"n": (1, 2, 1)})
    with pytest.raises(ValueError, match="controls: expected a non-empty mapping"):
        widgets.sweep_panel(lambda: 1, {})
    with pytest.raises(ValueError, match="cost, max_cost: give both or neither"):
        widgets.sweep_panel(lambda n: n, {"n": (1, 2, 1)}, cost=lambda n: n)


def test_panel_plain_text_is_a_readable_placeholder():
    pytest.importorskip("ipywidgets")
    from course_lib.teaching import widgets

    panel = widgets.sweep_panel(lambda n: {"n": n}, {"n": (1, 10, 1, 3)})
    text = panel._repr_mimebundle_()["text/plain"]
    assert "VBox" not in text and "run this cell" in text and "n" in text
    assert "application/vnd.jupyter.widget-view+json" in panel._repr_mimebundle_()


# --------------------------------------------------------------------------- bad input
# a ValueError/TypeError naming the argument, or the right answer; never NaN, a hang or a crash
FAST = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.timeout(30)
@FAST
@given(st.sampled_from([float("nan"), -1.0, "x"]))
def test_within_budget(bad):
    raises_naming((ValueError, TypeError), "max_cost", widgets.within_budget, {"n": 2}, lambda n: n, bad)
    raises_naming(TypeError, "cost", widgets.within_budget, {"n": 2}, bad, 10.0)
    raises_naming(ValueError, "cost", widgets.within_budget, {"n": 2}, lambda n: float("nan"), 10.0)
    raises_naming(TypeError, "values", widgets.within_budget, [("n", 2)], lambda n: n, 10.0)
    assert widgets.within_budget({"n": 2}, lambda n: n ** 3, 10.0) == (True, 8.0)


@pytest.mark.timeout(30)
def test_placeholder_text():
    raises_naming(TypeError, "names", widgets.placeholder_text, "abc")
    raises_naming(TypeError, "names", widgets.placeholder_text, [1, 2])
    assert "controls a, b" in widgets.placeholder_text(["a", "b"])
    assert "controls n" in widgets.placeholder_text({"n": None})
