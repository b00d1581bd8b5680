"""Seed 000's Halide numbers shown in chapter 06 (merged into ``course_lib.teaching.claims.CLAIMS``).

Every ``quote`` is verbatim from /work/shared/seeds/000_*.txt (Han & Uboweja) and contains the value
as written there.
"""

_PHI = "Intel Xeon Phi (61 cores, 512-bit SIMD), Halide AOT, B=1000, nx=nh=ny=1000, T=10, float32"

ENTRIES = {
    "000.halide.summary.speedup": dict(
        value=39.0, unit="x", seed="000", where="§1 Summary",
        conditions=f"best Halide schedule vs sequential Halide; {_PHI}",
        quote="achieved approx. 39x speedup against sequential training of the RNN in Halide on a 61 core "
              "Xeon Phi CPU"),
    "000.halide.fig8.halide_vs_numpy": dict(
        value=3.0, unit="x slower", seed="000", where="§4.2, Fig. 8",
        conditions=f"best Halide schedule vs NumPy (BLAS) per epoch, 100 epochs; {_PHI}",
        quote="our best optimized version of Halide RNN is about 3 times slower than our NumPy implementation "
              "on a 61 core Xeon CPU"),
    "000.halide.fig10.tile_rows": dict(
        value=64.0, unit="rows", seed="000", where="§4.4, Fig. 10",
        conditions=f"tile height of the matrix-product tiles; {_PHI}",
        quote="When we used tiling of 64 rows and 16 columns, we observed a significant speed up compared to "
              "the serial Halide implementation"),
    "000.halide.fig10.tile_cols": dict(
        value=16.0, unit="columns", seed="000", where="§4.4, Fig. 10",
        conditions=f"tile width = SIMD lanes of float32 in 512 bits; {_PHI}",
        quote="we utilized 16 for columns because this matched with the 512-bit SIMD of Xeon Phi"),
    "000.halide.fig10.best_seconds": dict(
        value=3.7, unit="s per epoch", seed="000", where="§4.4, Fig. 10",
        conditions=f"tiled + SIMD + parallel, 5 epochs; {_PHI}",
        quote="the 3.7 seconds in this diagram for the best performing code"),
    "000.halide.fig11.simd_speedup": dict(
        value=8.0, unit="x", seed="000", where="§4.5, Fig. 11",
        conditions=f"SIMD (16 lanes) vs scalar, with the other optimisations; {_PHI}",
        quote="Notice that our best speed up is only about 8x times which half of theoretical maximum which is 16x"),
    "000.halide.fig12.parallel_ideal": dict(
        value=61.0, unit="x", seed="000", where="§4.6, Fig. 12",
        conditions=f"the ideal parallel() speed-up on 61 cores, not reached; {_PHI}",
        quote="However, note that this is still nowhere near the optimum of 61x speed up"),
    "000.halide.fig14.aot_speedup": dict(
        value=3.0, unit="x", seed="000", where="§4.8, Fig. 14",
        conditions=f"AOT-compiled vs JIT Halide (JIT recompiling stages during training); {_PHI}",
        quote="it allowed us to achieve a 3x speed up as shown in Figure 14"),
    "000.halide.s49.loop_fusion": dict(
        value=2.0, unit="x", seed="000", where="§4.9",
        conditions=f"loop fusion of the per-step calculations instead of separate parallel steps; {_PHI}",
        quote="We have observed an almost 2x speed up when we performed loop fusion of all these calculations"),
}
