"""course_lib.experiments.gemm_providers: the course's products are the LSTM pass's (FLOPs counted from the
maths), every provider here is timed on each, and the floors are the sums they claim to be. No timed
assertions: times are only checked to be positive and consistent with one another."""
import numpy as np
import pytest

import course_lib  # noqa: F401  (backend decisions first)
from course_lib.algorithms import gemm
from course_lib.experiments import gemm_providers as gp
from helpers import raises_naming


def test_lstm_products_are_the_pass_flops():
    B, H, nx, T = 3, 5, 7, 4
    fwd = gp.lstm_products(B, H, nx, T, backward=False)
    flops = sum(2 * p["M"] * p["K"] * p["N"] * p["calls"] for p in fwd)
    assert flops == 2 * T * B * nx * 4 * H + 2 * T * B * H * 4 * H        # X W_ih^T once, h W_hh^T per step
    both = gp.lstm_products(B, H, nx, T, backward=True)
    extra = sum(2 * p["M"] * p["K"] * p["N"] * p["calls"] for p in both) - flops
    assert extra == 2 * T * B * 4 * H * H + 2 * 4 * H * T * B * (nx + H) + 2 * T * B * 4 * H * nx
    raises_naming(ValueError, "batch", gp.lstm_products, 0, H, nx, T)


@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True)])
def test_operands_have_the_products_layout(ta, tb):
    p = {"name": "x", "M": 3, "K": 4, "N": 5, "ta": ta, "tb": tb, "calls": 1}
    A, B, out = gp.operands(p)
    assert A.shape == (3, 4) and B.shape == (4, 5) and out.shape == (3, 5)
    assert A.flags.f_contiguous == ta and B.flags.f_contiguous == tb and out.flags.c_contiguous
    np.testing.assert_allclose(gemm.gemm(A, B, out), A @ B, rtol=1e-5, atol=1e-5)


def test_rates_and_floor():
    prods = gp.lstm_products(2, 8, 4, 3, backward=True)
    rows = gp.rates(prods, repeat=1)
    assert [r["product"] for r in rows] == prods
    for r in rows:
        assert set(r["best"]) == set(gemm.providers()) and r["speedup"]["numpy"] == pytest.approx(1.0)
        for v in r["best"]:
            assert r["best"][v] >= r["median"][v] > 0
    floor = gp.pass_floor_ms(rows, 3)
    for v in gemm.providers():
        want = sum(1e3 * r["gflop"] * r["product"]["calls"] / r["best"][v] for r in rows) / 3
        assert floor[v] == pytest.approx(want) and floor[v] > 0
    raises_naming(ValueError, "providers", gp.rates, prods, ("cublas",))


def test_lstm_on_providers_races_the_library_and_the_algorithm():
    r = gp.lstm_on_providers(2, 8, 4, 2, repeat=1)
    ms = r["ms_per_step"]
    assert set(ms) == {"naive", "workspace", *(f"workspace@{p}" for p in gemm.providers() if p != "numpy")}
    assert r["best_provider"] in gemm.providers()
    best = "workspace" if r["best_provider"] == "numpy" else f"workspace@{r['best_provider']}"
    assert r["library"] == pytest.approx(ms["workspace"] / ms[best]) and r["library"] >= 1.0
    assert r["algorithm"] == pytest.approx(ms["naive"] / ms["workspace"])
    if len(gemm.providers()) == 1:
        assert r["best_other"] is None and r["other_over_numpy"] is None and r["library"] == 1.0
    else:
        other = f"workspace@{r['best_other']}"
        assert r["other_over_numpy"] == pytest.approx(ms["workspace"] / ms[other])
        assert r["library"] == pytest.approx(max(1.0, r["other_over_numpy"]))


def test_recorded_gains_reads_records_and_skips_broken_ones(tmp_path):
    import json

    (tmp_path / "m1").mkdir()
    (tmp_path / "m1" / "lstm_providers.json").write_text(json.dumps({
        "when": "2026-01-01T00:00:00", "machine": {"cpu": "CPU X"},
        "passes": [{"shape": [64, 512, 512, 100], "backward": True,
                    "table_ms": {"workspace": 2.0, "fused_pre": 3.0, "workspace@mkl": 1.6, "persistent": 2.5}}]}))
    (tmp_path / "m2").mkdir()
    (tmp_path / "m2" / "lstm_providers.json").write_text("{not json")
    rows = gp.recorded_gains(tmp_path)
    assert len(rows) == 1
    r = rows[0]
    assert (r["machine"], r["record"], r["best"], r["shape"]) == ("CPU X", "m1", "workspace@mkl", (64, 512, 512, 100))
    assert r["numpy_ms"] == 2.0 and r["gain"] == pytest.approx(1.25)
    assert gp.recorded_gains(tmp_path / "nowhere") == []
