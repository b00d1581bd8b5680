"""Numbers from beyond the seeds shown in chapter 08's "the scan as matmuls" (production's chunked form).

None of the five seeds measures the chunked matmul form of a linear recurrence, so these are ``beyond``
claims, printed with their source; the chapter's verdict compares our CPU ratio with Mamba-2's GPU one.
"""

ENTRIES = {
    "beyond.mamba2.ssd_speedup": dict(
        value=8, unit="x", seed="beyond", where="abstract",
        conditions="SSD's chunked matmul form vs Mamba's fused selective scan (an element-wise scan), "
                   "NVIDIA A100 GPU; 2x to 8x over the sizes in the paper's efficiency benchmark",
        quote="Our state space duality (SSD) framework allows us to design a new architecture (Mamba-2) whose core "
              "layer is an a refinement of Mamba's selective SSM that is 2-8X faster, while continuing to be "
              "competitive with Transformers on language modeling.",
        source="Dao & Gu, ICML 2024 (Mamba-2: Transformers are SSMs), arXiv:2405.21060"),
    "beyond.mamba.scan_vs_attention_crossover": dict(
        value=2, unit="K tokens", seed="beyond", where="§4.5, Fig. 8",
        conditions="Mamba's fused SSM scan (state expansion N = 16) vs FlashAttention-2, one NVIDIA A100 GPU",
        quote="Our efficient SSM scan is faster than the best attention implementation that we know of "
              "(FlashAttention-2 (Dao 2023)) beyond sequence length 2K, and up to 20-40× faster than a standard "
              "scan implementation in PyTorch.",
        source="Gu & Dao, 2023 (Mamba: Linear-Time Sequence Modeling with Selective State Spaces), "
               "arXiv:2312.00752"),
}
