"""The chapters at a glance, as data (teaching layer): per chapter, what a reader will be able to do after it,
which chapters come first, an estimated study time, and what it leaves to a later chapter.

:mod:`course_lib.teaching.chapters` turns each row into the header cell of the chapter's lecture notebook and
worksheet (with the run times measured in ``recordings/``). Edit this table, then run
``python -m course_lib notebooks`` to regenerate the headers; ``tests/course/test_chapter_headers.py`` fails
until they match.

``minutes`` is an estimate (lecture and worksheet together, from the notebook's length and the worksheet's
exercises), never a measurement; the headers say so.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Chapter", "CHAPTER_TABLE"]


@dataclass(frozen=True)
class Chapter:
    objectives: tuple[str, ...]   # 3-5 things the reader can do after the chapter
    prerequisites: tuple[str, ...]  # earlier chapters ("02", ...), in order
    minutes: int                  # estimated study time: lecture + worksheet
    not_yet: str                  # what this chapter does not do yet, and which chapter does


CHAPTER_TABLE = {
    "00": Chapter((
        "Read this machine's report (cores, SIMD width, caches, BLAS, CUDA or its simulator, MPI) and say "
        "which chapter each fact matters for.",
        "Count the FLOPs and bytes of a matrix product and compute its arithmetic intensity.",
        "Read from a cache-residency sweep at what speed this machine reads data of a given size.",
        "Run a worksheet's check cell and act on its message.",
    ), (), 45, "No RNN yet: chapter 01 builds one and trains it."),
    "01": Chapter((
        "Write the RNN's forward step, forward pass and loss: three matrix products and two `tanh`s per step.",
        "Train a small RNN on the seed's image-rotation task and judge it against copying the input.",
        "Check hand-written gradients with central differences in float64, and find the time step where a "
        "wrong one goes wrong.",
        "Tell the one truly sequential product ($h_{t-1} W_{hh}$) from the ones that can be batched over time.",
    ), ("00",), 60, "The gradients come from a ready-made backward pass: chapter 02 derives BPTT and its cost."),
    "02": Chapter((
        "Derive BPTT as one reverse sweep, $O(T)$, from the WildML double loop, $O(T^2)$.",
        "Check that both give the exact gradient against numerical differentiation, and why truncating the "
        "double loop does not.",
        "Measure time against $T$ on log-log axes and read the slopes (2 and 1) and where they hold.",
        "Write the weight gradients as sums over time and batch, one GEMM each.",
    ), ("01",), 60, "One sequence at a time: chapter 03 batches sequences into matrix-matrix products."),
    "03": Chapter((
        "Write a batched forward pass and check it gives the numbers of one sequence at a time.",
        "Compute the arithmetic intensity of one recurrent step, as a matrix-vector and as a batched product.",
        "Place measured products on a roofline drawn with the bandwidth of the memory the weights come from.",
        "Find, on this machine, the batch size past which bigger batches stop helping per sequence.",
    ), ("01", "02"), 60, "BLAS's GEMM is a black box here: chapter 04 climbs to it from a triple loop."),
    "04": Chapter((
        "Explain how loop order decides whether the inner loop walks memory contiguously, and measure it.",
        "Confirm SIMD in the compiled machine code instead of assuming it.",
        "Write a tiled matmul that vectorises and a parallel one with `prange`, checked against numpy.",
        "Place each rung of the matmul ladder on the roofline; explain conflict misses at powers of two and "
        "packing as their cure.",
    ), ("00", "03"), 90, "One kernel at a time: chapter 05 adds threads, fusion and compile caching to a "
                         "whole training step."),
    "05": Chapter((
        "Write a training step's non-recurrent work (input projection, outputs, weight gradients) as one GEMM "
        "over all time steps.",
        "Fuse the backward pass's element-wise work into parallel numba kernels, and check that they vectorise.",
        "Measure thread scaling per workload and decide where threads pay.",
        "Compare JIT with a cached compile and explain the call overhead of small steps (seed Fig. 7).",
    ), ("02", "04"), 90, "Schedules are written by hand in numba: chapter 06 separates algorithm and schedule "
                         "with Halide."),
    "06": Chapter((
        "Write the RNN step as a Halide algorithm and change its schedule without changing its numbers.",
        "Run the seed's Fig. 10 grid (tiling, SIMD, parallel) here and read where this machine agrees with "
        "the seed's Xeon Phi.",
        "Write a schedule for the hidden-state product and fuse two stages into one definition.",
        "Place the best Halide schedule beside numpy, numba, BLAS and `fast_rnn`.",
    ), ("04", "05"), 75, "Training only: chapter 07 parallelises inference over batches, layers, ranks and "
                         "a CUDA kernel."),
    "07": Chapter((
        "Find the dependencies of a stacked softmax RNN and schedule its layers as a wavefront "
        "(critical path $T + L - 1$ instead of $TL$).",
        "Write numerically stable, batched softmax inference.",
        "Share a batch among $P$ MPI ranks and gather the results; measure what shared memory and message "
        "passing each cost here.",
        "Run the inference cell as a CUDA kernel (on a GPU, or in numba's simulator).",
    ), ("03", "05"), 105, "The time axis stays serial: chapter 08 parallelises it for linear recurrences."),
    "08": Chapter((
        "Write a linear recurrence as a scan over an associative, non-commutative combine of affine maps, "
        "and see why the closed form overflows.",
        "Compare Hillis-Steele and Blelloch by work and span; write a chunked scan (reduce, scan, expand) and "
        "the backward pass as a reverse scan.",
        "Write a one-block Blelloch scan as a CUDA kernel and a time-parallel scan for SIMD lanes or cores.",
        "Write the intra-chunk step of production's chunked layers as decay-masked matrix products, and scan "
        "across MPI ranks with `Exscan`.",
    ), ("02", "05", "07"), 150, "Linear recurrences only: chapters 10 (MGRIT) and 11 (Newton) parallelise "
                                "non-linear ones over time."),
    "09": Chapter((
        "Write one fused LSTM step and its transposed layout $Z^T = W_{hh} h^T$, checked against the reference.",
        "Profile where an LSTM step spends its time and explain $XW^T$ against $WX^T$ with the cache model.",
        "Build a small autotuner that times whole forward passes, once per shape, and never measures twice.",
        "Decide, at small batches, between one GEMM per step and $B$ matrix-vector products.",
    ), ("03", "04", "05"), 120, "The time axis stays serial: chapter 10 trains a GRU parallel in time."),
    "10": Chapter((
        "Read a GRU step as explicit Euler on a stiff ODE, and write the implicit GRU step that keeps coarse "
        "grids stable.",
        "Write F-relaxation, C-relaxation and a two-level FAS cycle, verified on Dahlquist's test problem.",
        "Run forward and backward (adjoint) through MGRIT, count its extra work, and model its speed-up "
        "against $T$ and $P$.",
        "Train with inexact MGRIT gradients and watch their bias with a cosine monitor.",
    ), ("02", "07"), 135, "Multigrid only: chapter 11 attacks the same chain with Newton's method and scans."),
    "11": Chapter((
        "Write one Newton step over the sequence (DEER) as a scan, with the $(A, b)$ combine and the GRU's "
        "Jacobian.",
        "Relate Newton's iteration count to $T$ and to the Lyapunov exponent, and predict $K^*$ from it.",
        "Write quasi-DEER as one element-wise scan and Picard as a prefix sum; weigh them against full "
        "Newton's $O(n_h^3)$ per step.",
        "Compute minGRU's log-space scan and see it drift in float32.",
    ), ("08", "10"), 120, "No rule yet for choosing among the methods: chapter 12 prices them all with one "
                          "cost model."),
    "12": Chapter((
        "Price a method in arithmetic, memory traffic, library calls, synchronisation and communication with "
        "one cost model.",
        "Compare the model's predictions with every chapter's benchmark configuration measured here.",
        "Simulate the seeds' machines to see how many processors their speed-ups need.",
        "Use the advisor to choose the parallelism for three problems it has not seen.",
    ), ("07", "08", "10", "11"), 75, "The last chapter: the seeds' GPUs and clusters are simulated here, "
                                     "not measured; run the chapters on such a machine to measure them."),
}
