"""Numbers from beyond the seeds shown in chapter 11 (Newton in time: DEER, minGRU).

The DEER paper's speed table (hidden size 1 ... 64) could not be found in a public source we can
quote, so the chapter describes its trend in words; the one number here is the demo output printed
in the official DEER repository's README (machine-discovery/deer).
"""

ENTRIES = {
    "beyond.deer.readme.gru_speedup": dict(
        value=68.189, unit="x", seed="beyond", where="README, demo script output",
        conditions="V100 GPU, untrained GRU (Equinox), input size 2, batch 16, sequence length 10000, float32",
        quote="DEER GRU speed up over sequential GRU: 68.189x",
        source="Lim et al., ICLR 2024 (DEER), github.com/machine-discovery/deer README"),
    "beyond.pararnn.speedup": dict(
        value=665, unit="x", seed="beyond", where="abstract",
        conditions="GPU, custom CUDA parallel reduction, Newton over the sequence vs naive sequential application",
        quote="Our implementation achieves speedups of up to 665x over naive sequential application",
        source="Danieli, Rodriguez, Sarabia, Suau & Zappella, ParaRNN, ICLR 2026 (arXiv:2510.21450), "
               "github.com/apple/ml-pararnn"),
}
