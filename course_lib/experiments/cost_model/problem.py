"""What the cost model is asked about (experiments folder, chapter 12): a :class:`Problem` -- a model ``kind``
(:data:`KINDS`) in a ``mode`` (:data:`MODES`) with its sizes, checked -- and what the model reads off it: its
parameters' bytes and its FLOPs per cell, per output and per pass (``TRAIN_FACTOR``: training's backward does
about twice the forward's FLOPs).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...core.validate import check_choice, check_float, check_int, check_positive_int

__all__ = ["KINDS", "MODES", "GATES", "TRAIN_FACTOR", "ITEMSIZE", "Problem"]

KINDS = ("rnn", "lstm", "gru", "linear")
MODES = ("inference", "training")
GATES = {"rnn": 1, "gru": 3, "lstm": 4, "linear": 0}
TRAIN_FACTOR = 3.0        # backward ~ 2x forward flops (the calls are counted, not assumed)
ITEMSIZE = 4              # float32


@dataclass(frozen=True)
class Problem:
    """What is to be computed: a ``kind`` of recurrent model in a ``mode``, ``batch`` sequences of ``T``
    steps, ``nh`` hidden units, ``layers`` stacked layers, ``nx`` inputs (default nh), ``ny`` outputs per
    step (0: none). ``linear`` is the element-wise recurrence ``h_t = a_t * h_{t-1} + x_t`` of chapter 08
    (``batch * nh`` independent channels)."""

    kind: str = "rnn"
    mode: str = "inference"
    batch: int = 1
    T: int = 100
    nh: int = 128
    layers: int = 1
    nx: int | None = None
    ny: int = 0

    def __post_init__(self):
        check_choice(self.kind, "kind", KINDS)
        check_choice(self.mode, "mode", MODES)
        for name in ("batch", "T", "nh", "layers"):
            check_positive_int(getattr(self, name), name, high=1 << 30)
        if self.nx is not None:
            check_positive_int(self.nx, "nx", high=1 << 30)
        check_int(self.ny, "ny", low=0, high=1 << 30)
        if self.kind == "linear" and self.layers != 1:
            raise ValueError(f"layers: a linear recurrence (kind='linear') is one element-wise layer, got {self.layers}")

    @property
    def n_in(self) -> int:
        return self.nh if self.nx is None else self.nx

    @property
    def training(self) -> bool:
        return self.mode == "training"

    def cell_flops(self, rows: int = 1) -> float:
        """Flops of one cell (one layer, one step) for ``rows`` sequences, forward."""
        rows = check_float(rows, "rows", low=0.0)
        if self.kind == "linear":
            return 2.0 * rows * self.nh
        g = GATES[self.kind]
        return rows * (2.0 * g * self.nh * (self.n_in + self.nh) + 10.0 * g * self.nh)

    def output_flops(self, rows: int = 1) -> float:
        rows = check_float(rows, "rows", low=0.0)
        return rows * (2.0 * self.nh * self.ny + 5.0 * self.ny) if self.ny else 0.0

    def param_bytes(self) -> float:
        if self.kind == "linear":
            return 0.0
        g = GATES[self.kind]
        return ITEMSIZE * self.layers * g * self.nh * (self.n_in + self.nh + 1) + ITEMSIZE * self.ny * (self.nh + 1)

    def flops(self) -> float:
        f = self.T * (self.layers * self.cell_flops(self.batch) + self.output_flops(self.batch))
        return f * (TRAIN_FACTOR if self.training else 1.0)

    def describe(self) -> str:
        return (f"{self.kind} {self.mode}, batch={self.batch}, T={self.T}, nh={self.nh}, layers={self.layers}"
                + (f", ny={self.ny}" if self.ny else ""))
