"""A character-level text corpus that ships with Python itself (data folder).

The text is the help topics of the standard library's ``pydoc_data`` package (what ``help()``
prints for keywords and topics): about 460 k characters of English prose and code, present in
every CPython install -- nothing is downloaded.

``load_text(max_chars=None)``    -> str (topics in sorted order, joined by blank lines)
``Vocab.from_text(text)``        -> a character vocabulary with ``encode``/``decode``
``split(ids, val_fraction)``     -> (train_ids, val_ids), a contiguous held-out tail
``batch_windows(ids, T, batch, rng)`` -> (X_ids (T, B), Y_ids (T, B)) next-character windows
``one_hot(ids, vocab_size)``     -> float32 one-hot of any shape ``(...,)`` -> ``(..., V)``
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.validate import check_alloc, check_array, check_dtype, check_float, check_int, check_positive_int

__all__ = ["load_text", "Vocab", "split", "batch_windows", "one_hot"]


def load_text(max_chars: int | None = None) -> str:
    """The pydoc help topics as one string (deterministic order), optionally truncated."""
    from pydoc_data.topics import topics

    text = "\n\n".join(topics[k].strip() for k in sorted(topics))
    if max_chars is not None:
        max_chars = check_positive_int(max_chars, "max_chars")
        text = text[:max_chars]
    return text


@dataclass
class Vocab:
    """Characters <-> integer ids. ``chars[i]`` is the character with id ``i``."""

    chars: str

    def __post_init__(self):
        if not isinstance(self.chars, str) or not self.chars:
            raise TypeError(f"chars: expected a non-empty string of distinct characters, got {self.chars!r}")
        if len(set(self.chars)) != len(self.chars):
            raise ValueError("chars: expected distinct characters (each id names one character)")

    @classmethod
    def from_text(cls, text: str) -> "Vocab":
        if not isinstance(text, str):
            raise TypeError(f"text: expected a non-empty string, got {type(text).__name__}")
        if not text:
            raise ValueError("text: expected a non-empty string")
        return cls("".join(sorted(set(text))))

    @property
    def size(self) -> int:
        return len(self.chars)

    def __len__(self) -> int:
        return self.size

    def encode(self, text: str) -> np.ndarray:
        """int64 ids of ``text``; a character outside the vocabulary is a ValueError naming it."""
        if not isinstance(text, str):
            raise TypeError(f"text: expected a string, got {type(text).__name__}")
        lookup = {c: i for i, c in enumerate(self.chars)}
        try:
            return np.fromiter((lookup[c] for c in text), dtype=np.int64, count=len(text))
        except KeyError as exc:
            raise ValueError(f"text: character {exc.args[0]!r} is not in the vocabulary of {self.size}") from None

    def decode(self, ids) -> str:
        """The string for a 1-D sequence of ids; ids outside ``[0, size)`` are a ValueError."""
        ids = check_array(ids, "ids", ndim=1, dtype="int")
        if ids.size and (ids.min() < 0 or ids.max() >= self.size):
            raise ValueError(f"ids: expected token ids in [0, {self.size}), got min {ids.min()}, max {ids.max()}")
        return "".join(self.chars[i] for i in ids)


def split(ids, val_fraction: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """Train on the head, validate on the contiguous tail (no shuffling across the boundary)."""
    ids = check_array(ids, "ids", ndim=1, dtype="int")
    val_fraction = check_float(val_fraction, "val_fraction", low=0.0, high=0.9)
    n_val = int(round(ids.size * val_fraction))
    if ids.size - n_val < 2:
        raise ValueError(f"ids: expected at least 2 training tokens after the split, got {ids.size - n_val}")
    return ids[: ids.size - n_val], ids[ids.size - n_val:]


def batch_windows(ids, T: int, batch: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``batch`` random windows of ``T`` characters and their next characters, time-major ``(T, B)``."""
    ids = check_array(ids, "ids", ndim=1, dtype="int")
    T = check_positive_int(T, "T")
    batch = check_positive_int(batch, "batch")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a numpy Generator (np.random.default_rng(seed)), got {type(rng).__name__}")
    check_alloc((4, T, batch), np.int64, "batch", what="the windows")
    if ids.size < T + 1:
        raise ValueError(f"T: expected at most {ids.size - 1} (the text has {ids.size} tokens), got {T}")
    starts = rng.integers(0, ids.size - T, size=batch)
    idx = starts[None, :] + np.arange(T)[:, None]
    return ids[idx], ids[idx + 1]


def one_hot(ids, vocab_size: int, dtype=np.float32) -> np.ndarray:
    """One-hot encoding ``(...,) -> (..., vocab_size)``; out-of-range ids are a ValueError."""
    ids = check_array(ids, "ids", dtype="int", finite=False)
    vocab_size = check_int(vocab_size, "vocab_size", low=1)
    dtype = check_dtype(dtype, "dtype")
    check_alloc(ids.shape + (vocab_size,), dtype, "vocab_size", what="the one-hot array")
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
        raise ValueError(f"ids: expected token ids in [0, {vocab_size}), got min {ids.min()}, max {ids.max()}")
    out = np.zeros(ids.shape + (vocab_size,), dtype=dtype)
    np.put_along_axis(out, ids[..., None], 1, axis=-1)
    return out
