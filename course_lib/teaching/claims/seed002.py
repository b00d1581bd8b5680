"""Seed 002's numbers shown in chapter 10 (Moon & Cyr, parallel-in-time GRU training with MGRIT;
merged into ``course_lib.teaching.claims.CLAIMS``).

Every ``quote`` is verbatim from /work/shared/seeds/002_*.txt (slides) and contains the value as
written there. The seed ran on Sandia's Attaway machine (2 sockets x 18-core 2.3 GHz Xeon per node,
4 MPI ranks per node with 9 OpenMP threads each), HMDB51 videos cut to 128 frames, ResNet features.
"""

_ATTAWAY = "Attaway: 36-core Xeon nodes, 4 MPI ranks x 9 OpenMP threads per node"
_HMDB = "HMDB51, 128 frames per video, ResNet18/34/50 features per frame, batch 100, Adam"

ENTRIES = {
    "002.speedup.max": dict(
        value=6.6, unit="x", seed="002", where="Performance Comparison: Speedup",
        conditions=f"Parallel Implicit GRU (MGRIT) vs the serial Classic GRU, training, with ResNet "
                   f"preprocessors; {_HMDB}; {_ATTAWAY}",
        quote="Parallel Implicit GRU achieves up to 6.6x speedup over the Classic GRU"),
    "002.hmdb51.frames": dict(
        value=128.0, unit="frames", seed="002", where="HMDB51 data set",
        conditions="every video truncated or padded to this many time steps",
        quote="We truncate/pad each video to 128 frames"),
    "002.approach.steps_per_processor": dict(
        value=4.0, unit="time steps per processor", seed="002", where="Our Approach: Parallel-in-Time Training",
        conditions="sequence length 2^n split over P = 2^n/4 processors",
        quote=r"$P = 2^n/4 = \text{number of processors}$"),
    "002.attaway.threads_per_rank": dict(
        value=9.0, unit="OpenMP threads per MPI rank", seed="002", where="Video Classification with Implicit GRU",
        conditions=_ATTAWAY,
        quote="Run with 9 OpenMP threads per MPI rank (4 ranks per node)"),
    "002.training.batch": dict(
        value=100.0, unit="sequences", seed="002", where="Training Details",
        conditions=_HMDB,
        quote="Batch size of 100"),
    "002.resnet18.features": dict(
        value=1000.0, unit="features per frame", seed="002", where="Video Classification with Implicit GRU",
        conditions="input of the GRU: a pre-trained ResNet's output per frame, computed once, not on coarse grids",
        quote="E.g., ResNet18 computes 1000 features per frame"),
}
