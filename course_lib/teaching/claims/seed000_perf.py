"""Seed 000's performance numbers shown in chapters 03 (batching), 04 (tiling & SIMD) and 05 (threads &
fusion). Merged into ``course_lib.teaching.claims.CLAIMS``.

Every ``quote`` is verbatim (whitespace-normalised) from /work/shared/seeds/000_*.txt (Han & Uboweja)
and contains the value as written there. The Halide chapter's numbers that these chapters also show
(Fig. 8's 3x, Fig. 10's tiles, Fig. 11's 8x, Fig. 14's 3x, §4.9's 2x) live in ``halide.py`` under
``000.halide.*``; they are used from there, not repeated here.
"""

_PHI = "Intel Xeon Phi (61 cores, 512-bit SIMD), Halide AOT, B=1000, nx=nh=ny=1000, T=10, float32"
_PHI_SWEEP = "Intel Xeon Phi (61 cores, 512-bit SIMD), Halide AOT, nx=nh=ny=1000, T=10, float32"  # B is the swept variable
_I5 = "2-core Intel Core i5, Theano vs hand-written NumPy, float32, same batching"
_S410 = f"share of one training epoch; {_PHI}"


def _phase(row: int, value: float, label: str, quote: str) -> dict:
    return dict(value=value, unit="%", seed="000", where=f"§4.10, row {row}",
                conditions=f"{label}: {_S410}", quote=quote)


ENTRIES = {
    # ---------------------------------------------------------------- chapter 03: batching
    "000.ch03.fig9.batch_min": dict(
        value=100, unit="sequences", seed="000", where="§4.3, Fig. 9",
        conditions=f"smallest batch of the sweep (steps of 100), time per epoch normalised by data size; {_PHI_SWEEP}",
        quote="using batch sizes of 100 up to 1000, incrementally increasing by 100"),
    "000.ch03.fig9.batch_max": dict(
        value=1000, unit="sequences", seed="000", where="§4.3, Fig. 9",
        conditions=f"largest batch of the sweep; {_PHI_SWEEP}",
        quote="using batch sizes of 100 up to 1000, incrementally increasing by 100"),
    "000.ch03.s43.small_workload": dict(
        value=32, unit="(layer width)", seed="000", where="§4.3",
        conditions="the seed's 'small workload'; it reports JIT compilation dominating Halide's time there",
        quote="We have also experimented with a variety of workloads such as dimensions of 32 for small workloads"),
    "000.ch03.s43.large_workload": dict(
        value=4096, unit="(layer width)", seed="000", where="§4.3",
        conditions="the seed's 'large workload'; only some improvement of the Halide/NumPy ratio there",
        quote="dimensions of 32 for small workloads and 4096 for large workloads"),
    # ---------------------------------------------------------------- chapter 04: tiling & SIMD
    "000.ch04.blas_simd": dict(
        value=16, unit="x", seed="000", where="§4 (setup)",
        conditions="what SIMD can give NumPy's BLAS on the Xeon Phi: 16 float32 lanes per 512-bit vector",
        quote="it has access to SIMD vector instructions on Xeno Phi which gives it up to 16x speed up"),
    "000.ch04.pow2.penalty": dict(
        value=0.5, unit="s per epoch", seed="000", where="§4.9",
        conditions=f"n = 1024 instead of 1000 (cache conflict misses on diagonal blocks); {_PHI}",
        quote="there is a significant increase in per epoch speed as the dimensions increase from 1000 to 1024 "
              "(0.5 seconds increase per epoch)"),
    "000.ch04.fig8.best_seconds": dict(
        value=2.9, unit="s per epoch", seed="000", where="§4.4 (about Fig. 8)",
        conditions=f"the best Halide schedule, 100 epochs; {_PHI}",
        quote="does not contradict the 2.9 seconds performance of the same code in the previous diagram"),
    # ---------------------------------------------------------------- chapter 05: threads & fusion
    "000.ch05.fig7.small_data": dict(
        value=2, unit="x", seed="000", where="§4.1, Fig. 7",
        conditions=f"hand-written NumPy over Theano for much smaller data; {_I5}",
        quote="for much smaller data, the NumPy approach can reach 2x speedup compared to the Theano approach"),
    "000.ch05.fig7.cores": dict(
        value=2, unit="cores", seed="000", where="§4.1, Fig. 7",
        conditions=_I5,
        quote="our NumPy implementation of RNN from scratch is competitive with the RNN implemented using Theano "
              "on a 2-core CPU"),
    "000.ch05.s410.init_forward": _phase(1, 0.05, "initialize forward propagation",
                                         "1. [Initialize Forward Propagation] 0.05%"),
    "000.ch05.s410.h": _phase(2, 22.16, "calculate h_t", "2. [Calculate $h_t$ ] 22.16%"),
    "000.ch05.s410.yhat": _phase(3, 5.78, "calculate ŷ_t", "3. [Calculate $\\hat{y}_t$ ] 5.78%"),
    "000.ch05.s410.saving": _phase(4, 22.55, "saving all intermediate variables",
                                   "4. [Saving all intermediate variables] 22.55%"),
    "000.ch05.s410.loss": _phase(5, 0.79, "calculating loss", "5. [Calculating loss] 0.79%"),
    "000.ch05.s410.init_backward": _phase(6, 0.16, "initialize back propagation",
                                          "6. [Initialize Back Propagation] 0.16%"),
    "000.ch05.s410.output_delta": _phase(7, 0.54, "∂E/∂(W_hy h_t), the output delta",
                                         "7. [Calculating $\\frac{\\partial E}{\\partial (W_{hy}h_t)}$ ]0.54%"),
    "000.ch05.s410.hidden_delta": _phase(8, 23.33, "∂E/∂(W_xh x_t + W_hh h_{t-1}), the hidden delta",
                                         "8. [Calculating $\\frac{\\partial E}{\\partial (W_{xh}x_t+W_{hh}h_{t-1})}$ ] 23.33%"),
    "000.ch05.s410.gradient_updates": _phase(9, 24.60, "gradient updates", "9. [Gradient Updates] 24.60%"),
    "000.ch05.s410.descent": _phase(10, 0.06, "gradient descent", "10. [Gradient Descent] 0.06%"),
}

S410_PHASES = {
    "initialize forward": "000.ch05.s410.init_forward",
    "compute h_t": "000.ch05.s410.h",
    "compute ŷ_t": "000.ch05.s410.yhat",
    "saving intermediates": "000.ch05.s410.saving",
    "loss": "000.ch05.s410.loss",
    "initialize backward": "000.ch05.s410.init_backward",
    "output delta": "000.ch05.s410.output_delta",
    "hidden delta": "000.ch05.s410.hidden_delta",
    "gradient updates": "000.ch05.s410.gradient_updates",
    "descent": "000.ch05.s410.descent",
}
"""``experiments.profile.PHASES`` -> the claim id of the seed's row (the ten rows, one to one)."""
