"""The seed-claims registry: every number from the seed papers that the course shows (teaching layer).

``CLAIMS`` maps an id (``"000.summary.speedup"``) to a :class:`Claim` with

    value       the number as the seed states it
    unit        "x", "%", "s", "GFLOP/s", "ms", "epochs", ... ("" for a plain count)
    seed        "000" ... "004" (the documents in shared/seeds/), or "beyond" for a paper outside them
    where       figure, table or section ("Fig. 10", "§4.3", "Table 1")
    conditions  the seed's machine and sizes ("61-core Xeon Phi, n = 1000, T = 10")
    quote       the seed's own words, verbatim; it contains the value as written there
    source      for seed == "beyond": the citation (authors, venue, table)

Notebooks print seed numbers only from here (``claims.show(id)``, or inside a verdict line). A test
checks each quote against the seed texts, whitespace-normalised, and that it contains the value.
Entries live in one module per seed or topic in this package (``seed000_perf.py``, ``halide.py``, ...),
each with an ``ENTRIES`` dict; they are merged here, and an id defined twice is an error.
"""
from __future__ import annotations

import difflib
import importlib
import pkgutil
import re
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["Claim", "CLAIMS", "UnknownClaim", "claim", "nearest_ids", "show", "numbers_in"]

SEEDS = ("000", "001", "002", "003", "004", "beyond")
SEED_TITLES = {
    "000": "Han & Uboweja, Parallel Training of RNNs (seed 000)",
    "001": "Wen & Tammineedi, Parallelizing RNNs Using Scan (seed 001)",
    "002": "Moon & Cyr, Parallel Training of GRU Networks with a Multi-Grid Solver (seed 002)",
    "003": "Zheng, EcoRNN (seed 003)",
    "004": "Pokharel & Mishra, Parallelization of Inference on RNNs (seed 004)",
}


@dataclass(frozen=True)
class Claim:
    """One number from a seed document (see the module docstring for the fields)."""

    id: str
    value: float
    unit: str
    seed: str
    where: str
    conditions: str
    quote: str
    source: str = ""

    def formatted(self) -> str:
        """The value with its unit: ``39×``, ``43%``, ``1.25 s``."""
        v = f"{self.value:g}"
        if self.unit in ("x", "×"):
            return f"{v}×"
        if self.unit == "%":
            return f"{v}%"
        return f"{v} {self.unit}".strip()

    def citation(self) -> str:
        who = self.source if self.seed == "beyond" else f"seed {self.seed}"
        return f"{who}, {self.where}"

    def __str__(self) -> str:
        return f"{self.citation()} ({self.conditions}): {self.formatted()} -- \u201c{self.quote}\u201d"


_NUM = re.compile(r"(?<![\w.])[-+]?\d+(?:[.,]\d+)*(?:\.\d+)?")
_WORD_NUMBERS = {"twice": 2.0, "thrice": 3.0, "half": 0.5}


def numbers_in(text: str) -> list[float]:
    """Every number written in ``text`` ("39x" -> 39, "1,000" -> 1000, "6.6" -> 6.6, "twice" -> 2)."""
    out = []
    for m in _NUM.finditer(text):
        s = m.group(0).replace(",", "")
        try:
            out.append(float(s))
        except ValueError:
            continue
    out += [v for w, v in _WORD_NUMBERS.items() if re.search(rf"\b{w}\b", text, re.IGNORECASE)]
    return out


def _check_entry(cid: str, e: dict, module: str) -> Claim:
    where = f"{module}: claim {cid!r}"
    if not isinstance(e, dict):
        raise TypeError(f"{where}: expected a dict of fields, got {type(e).__name__}")
    missing = {"value", "unit", "seed", "where", "conditions", "quote"} - set(e)
    if missing:
        raise ValueError(f"{where}: missing field(s) {sorted(missing)}")
    unknown = set(e) - {"value", "unit", "seed", "where", "conditions", "quote", "source"}
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {sorted(unknown)}")
    if e["seed"] not in SEEDS:
        raise ValueError(f"{where}: seed must be one of {SEEDS}, got {e['seed']!r}")
    if e["seed"] == "beyond" and not e.get("source"):
        raise ValueError(f"{where}: a claim from beyond the seeds needs a 'source' citation")
    if isinstance(e["value"], bool) or not isinstance(e["value"], (int, float)):
        raise TypeError(f"{where}: value must be a number, got {e['value']!r}")
    return Claim(cid, float(e["value"]), str(e["unit"]), e["seed"], str(e["where"]), str(e["conditions"]),
                 str(e["quote"]), str(e.get("source", "")))


def _load() -> dict[str, Claim]:
    out: dict[str, Claim] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        mod = importlib.import_module(f"{__name__}.{info.name}")
        entries = getattr(mod, "ENTRIES", None)
        if not isinstance(entries, dict):
            raise TypeError(f"{mod.__name__}: expected a module-level dict ENTRIES")
        for cid, e in entries.items():
            if cid in out:
                raise ValueError(f"{mod.__name__}: claim id {cid!r} is defined twice")
            out[cid] = _check_entry(cid, e, mod.__name__)
    return out


CLAIMS = MappingProxyType(_load())


class UnknownClaim(KeyError):
    """A claim id that is not in the registry (a KeyError whose message prints as written, not quoted)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def nearest_ids(cid: str, n: int = 5) -> list[str]:
    """The registered ids closest to ``cid``: by spelling (difflib), then others of the same seed prefix."""
    close = difflib.get_close_matches(cid, list(CLAIMS), n=n, cutoff=0.5)
    prefix = cid.split(".")[0]
    same = [k for k in CLAIMS if k.split(".")[0] == prefix and k not in close]
    return (close + same)[:n]


def claim(cid) -> Claim:
    """The :class:`Claim` with id ``cid`` (a Claim passes through); a wrong id is a KeyError
    (:class:`UnknownClaim`) that says the id and the nearest registered ids."""
    if isinstance(cid, Claim):
        return cid
    if not isinstance(cid, str):
        raise TypeError(f"cid: expected a claim id string such as '001.speedup', got {type(cid).__name__} {cid!r}")
    if cid not in CLAIMS:
        near = nearest_ids(cid)
        hint = f"; the nearest ids are {', '.join(near)}" if near else \
            f"; ids look like {', '.join(list(CLAIMS)[:3])} (claims.CLAIMS lists all {len(CLAIMS)})"
        raise UnknownClaim(f"cid: no claim {cid!r} in the registry{hint}")
    return CLAIMS[cid]


def show(*ids: str) -> str:
    """The claims, one per line, as the notebooks print them (seed, where, conditions, value, quote)."""
    return "\n".join(str(claim(i)) for i in ids)
