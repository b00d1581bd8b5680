"""A simulated cluster with a virtual clock: parallel schedules as task graphs (experiments folder: the cost model's simulated machine).

The seeds' headline numbers come from machines the reader does not have (61 cores, a K80, 36-core
nodes). Here each schedule of the course is written as a *task graph*: tasks with a cost (seconds,
or any unit -- steps, flops, combines), dependencies, a kind (``"compute"``, ``"comm"``,
``"barrier"``, ``"launch"``, ``"serial"``) and optionally the processor that must run it. Two
things are computed from a graph, never typed in:

* :meth:`TaskGraph.critical_path` -- the longest chain of dependent tasks (the span: no number of
  processors finishes sooner);
* :meth:`TaskGraph.simulate` -- a list schedule on ``P`` virtual processors with a virtual clock
  (each task starts when its inputs are done and a processor is free; pinned tasks wait for their
  processor). Returns a :class:`Schedule` (start, end and processor per task) that
  :func:`course_lib.teaching.plots.cost_model.gantt` draws.

Builders for the course's schedules (costs are arguments: a caller passes seconds from a cost model
or unit costs to count steps):

``wavefront_graph(T, L, cell, P=, barrier=)``      chapter 07's layer wavefront (cells (l, t))
``data_parallel_graph(batch, P, per_seq, ...)``        chapter 07's MPI batch split (scatter, compute, gather
                                                   or an allreduce of gradients when training)
``mgrit_graph(nt, m=, levels=, iters=, P=, step=, latency=)``   chapter 10's MGRIT V-cycles, phase by phase
``deer_graph(T, nh, iters=, P=, method=)``          chapter 11's DEER iterations (flops per task)
``blelloch_graph(T, combine=)``, ``hillis_steele_graph(T, combine=)``   chapter 08's scans, one task per combine
``chunked_scan_graph(T, P, reduce, carry, expand, launch=)``    the reduce / carries / expand scan (CPU or GPU)
``threads_step_graph(T, P, parallel_part, serial_part, barrier=)``  a step loop split over P threads (Halide, BLAS)

Each builder's critical path and work are checked in tests against the course's own counts
(:func:`course_lib.algorithms.scan.scan_counts`, :func:`course_lib.algorithms.mgrit.span_model`,
:func:`course_lib.algorithms.newton.span_model`, :func:`course_lib.parallel.inference.work_span`).
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

from ...algorithms.mgrit import RELAXATIONS, hierarchy
from ...core.validate import check_bool, check_choice, check_float, check_int, check_positive_int, check_str

__all__ = [
    "Task",
    "wavefront_counts",
    "deer_counts",
    "TaskGraph",
    "Schedule",
    "KINDS",
    "wavefront_graph",
    "data_parallel_graph",
    "mgrit_graph",
    "deer_graph",
    "blelloch_graph",
    "hillis_steele_graph",
    "chunked_scan_graph",
    "threads_step_graph",
]

KINDS = ("compute", "serial", "comm", "barrier", "launch")
MAX_TASKS = 2_000_000   # a graph is Python objects: beyond this, building it would take minutes
MAX_EDGES = 20_000_000  # dependencies (every task of a phase waits for every task of the previous one)


def _check_graph_size(tasks: float, edges: float, name: str) -> None:
    """Refuse, before building, a graph with more than MAX_TASKS tasks or MAX_EDGES dependencies,
    naming the argument that made it large."""
    if tasks > MAX_TASKS or edges > MAX_EDGES:
        raise ValueError(f"{name}: too large: the task graph would have about {tasks:.3g} tasks and {edges:.3g} "
                         f"dependencies; the limit is {MAX_TASKS:,} tasks and {MAX_EDGES:,} dependencies "
                         "(count with the closed forms instead)")


def _check_costs(**costs) -> dict:
    """Every cost is a finite number >= 0 (named by its argument)."""
    return {k: check_float(v, k, low=0.0) for k, v in costs.items()}


@dataclass
class Task:
    name: str
    cost: float
    deps: tuple = ()
    kind: str = "compute"
    proc: int | None = None

    def __post_init__(self):
        check_str(self.name, "name")
        self.cost = check_float(self.cost, "cost", low=0.0)
        if isinstance(self.deps, (str, bytes)) or not hasattr(self.deps, "__iter__"):
            raise TypeError(f"deps: expected a tuple of task names, got {type(self.deps).__name__} {self.deps!r}")
        self.deps = tuple(self.deps)
        check_choice(self.kind, "kind", KINDS)
        if self.proc is not None:
            self.proc = check_int(self.proc, "proc", low=0)


@dataclass
class Schedule:
    """Where and when each task ran on the virtual clock. ``rows``: (name, proc, start, end, kind)."""

    P: int
    rows: list = field(default_factory=list)
    label: str = ""

    def __post_init__(self):
        self.P = check_positive_int(self.P, "P")
        if not isinstance(self.rows, list):
            raise TypeError(f"rows: expected a list of (name, proc, start, end, kind), got {type(self.rows).__name__}")
        check_str(self.label, "label", nonempty=False)

    @property
    def makespan(self) -> float:
        return max((r[3] for r in self.rows), default=0.0)

    @property
    def work(self) -> float:
        return sum(r[3] - r[2] for r in self.rows)

    def busy(self, proc: int) -> float:
        """Time processor ``proc`` (0 <= proc < P) spent on tasks."""
        proc = check_int(proc, "proc", low=0, high=self.P - 1)
        return sum(r[3] - r[2] for r in self.rows if r[1] == proc)

    def utilisation(self) -> float:
        """Busy processor time / (P * makespan)."""
        m = self.makespan
        return self.work / (self.P * m) if m > 0 else 1.0


class TaskGraph:
    """A DAG of :class:`Task` s, added in an order where dependencies come first."""

    def __init__(self, label: str = ""):
        self.label = check_str(label, "label", nonempty=False)
        self.tasks: dict[str, Task] = {}

    def add(self, name: str, cost: float, deps=(), kind: str = "compute", proc: int | None = None) -> str:
        check_str(name, "name")
        if name in self.tasks:
            raise ValueError(f"name: task {name!r} already exists")
        cost = check_float(cost, "cost", low=0.0)
        check_choice(kind, "kind", KINDS)
        if isinstance(deps, (str, bytes)) or not hasattr(deps, "__iter__"):
            raise TypeError(f"deps: expected a list of task names, got {type(deps).__name__} {deps!r}")
        deps = tuple(deps)
        for d in deps:
            if d not in self.tasks:
                raise ValueError(f"deps: task {name!r} depends on {d!r}, which was not added before it")
        if proc is not None:
            proc = check_int(proc, "proc", low=0)
        self.tasks[name] = Task(name, cost, deps, kind, proc)
        return name

    def __len__(self) -> int:
        return len(self.tasks)

    def work(self) -> float:
        """Sum of all task costs (the time one processor would need)."""
        return float(sum(t.cost for t in self.tasks.values()))

    def critical_path(self) -> tuple[float, list[str]]:
        """(length, task names) of the longest dependent chain -- the span."""
        best: dict[str, float] = {}
        prev: dict[str, str | None] = {}
        for name, t in self.tasks.items():  # insertion order is topological
            b, p = 0.0, None
            for d in t.deps:
                if best[d] > b:
                    b, p = best[d], d
            best[name] = b + t.cost
            prev[name] = p
        if not best:
            return 0.0, []
        end = max(best, key=best.get)
        path = [end]
        while prev[path[-1]] is not None:
            path.append(prev[path[-1]])
        return float(best[end]), path[::-1]

    def simulate(self, P: int, label: str | None = None) -> Schedule:
        """List-schedule on ``P`` virtual processors: ready tasks by longest remaining path first;
        a task starts at max(its inputs done, its processor free). Returns a :class:`Schedule`."""
        P = check_positive_int(P, "P", high=1 << 16)
        if label is not None:
            check_str(label, "label", nonempty=False)
        for t in self.tasks.values():
            if t.proc is not None and t.proc >= P:
                raise ValueError(f"P: task {t.name!r} is pinned to processor {t.proc}, but P = {P}")
        names = list(self.tasks)
        children: dict[str, list[str]] = {n: [] for n in names}
        for n in names:
            for d in self.tasks[n].deps:
                children[d].append(n)
        tail: dict[str, float] = {}
        for n in reversed(names):  # longest path from the task to the end
            tail[n] = self.tasks[n].cost + max((tail[c] for c in children[n]), default=0.0)
        order = {n: i for i, n in enumerate(names)}
        waiting = {n: len(self.tasks[n].deps) for n in names}
        ready_at = {n: 0.0 for n in names}
        free = [0.0] * P
        ready = [(-tail[n], order[n], n) for n in names if waiting[n] == 0]
        heapq.heapify(ready)
        sched = Schedule(P, [], self.label if label is None else label)
        while ready:
            _, _, n = heapq.heappop(ready)
            t = self.tasks[n]
            if t.proc is not None:
                p = t.proc
            else:  # the processor that lets it start earliest (lowest index on ties)
                p = min(range(P), key=lambda q: (max(free[q], ready_at[n]), q))
            start = max(free[p], ready_at[n])
            end = start + t.cost
            free[p] = end
            sched.rows.append((n, p, start, end, t.kind))
            for c in children[n]:
                ready_at[c] = max(ready_at[c], end)
                waiting[c] -= 1
                if waiting[c] == 0:
                    heapq.heappush(ready, (-tail[c], order[c], c))
        return sched


def _split(n: int, P: int) -> list[int]:
    """n items over min(P, n) processors, as even as possible (first ones get the extra)."""
    k = min(P, n)
    q, r = divmod(n, k)
    return [q + (1 if i < r else 0) for i in range(k)]


def _phase(g: TaskGraph, tag: str, costs, deps, kind="compute") -> list[str]:
    """One task per processor (pinned), each depending on every task of the previous phase."""
    return [g.add(f"{tag}/p{i}", c, deps, kind=kind, proc=i) for i, c in enumerate(costs)]


# --------------------------------------------------------------------------- chapter 07
def deer_counts(T: int, nh: int, P: int, *, iters: int, method: str = "newton") -> dict:
    """Flops of DEER on P processors from its task graph (:func:`deer_graph`): span and work."""
    T, nh, P = check_positive_int(T, "T"), check_positive_int(nh, "nh"), check_positive_int(P, "P")
    iters = check_positive_int(iters, "iters")
    g = deer_graph(T, nh, iters=iters, P=P, method=method)
    span, _ = g.critical_path()
    return {"span": span, "work": g.work(), "iters": iters}


def wavefront_counts(T: int, L: int, P: int) -> dict:
    """Cells, diagonals (span) and barrier steps ``sum_d ceil(|D_d| / P)`` of the layer wavefront, in closed form."""
    T, L, P = check_positive_int(T, "T"), check_positive_int(L, "L"), check_positive_int(P, "P")
    a, b = min(T, L), max(T, L)  # diagonals: 1, 2, .., a-1 cells, then a cells b-a+1 times, then a-1, .., 1
    q, r = divmod(a - 1, P)      # sum_{k=1..a-1} ceil(k / P) = P q (q+1) / 2 + r (q+1)
    steps = 2 * (P * q * (q + 1) // 2 + r * (q + 1)) + (b - a + 1) * -(-a // P)
    return {"work": T * L, "span": T + L - 1, "steps": steps}


def wavefront_graph(T: int, L: int, cell: float = 1.0, *, barrier: bool = True, handoff: float = 0.0) -> TaskGraph:
    """Cells ``(l, t)`` of an ``L``-layer RNN over ``T`` steps; cell (l, t) needs (l, t-1) and (l-1, t).
    With ``barrier=True`` (how :func:`course_lib.parallel.inference.predict_wavefront` runs) every cell of
    diagonal d waits for the whole diagonal d-1, plus a ``handoff`` task per diagonal (pool round trip)."""
    T = check_positive_int(T, "T")
    L = check_positive_int(L, "L")
    barrier = check_bool(barrier, "barrier")
    _check_costs(cell=cell, handoff=handoff)
    _check_graph_size(T * L, T * L * (min(T, L) if barrier else 2), "T" if T >= L else "L")
    g = TaskGraph(f"wavefront T={T} L={L}")
    prev_diag: list[str] = []
    for d in range(T + L - 1):
        cur = []
        for l in range(max(0, d - T + 1), min(L, d + 1)):
            t = d - l
            if barrier:
                deps = list(prev_diag)
            else:
                deps = ([f"c{l},{t - 1}"] if t > 0 else []) + ([f"c{l - 1},{t}"] if l > 0 else [])
            cur.append(g.add(f"c{l},{t}", cell, deps))
        if barrier and handoff > 0:
            cur = [g.add(f"handoff{d}", handoff, cur, kind="barrier", proc=0)]
        prev_diag = cur
    return g


def data_parallel_graph(batch: int, P: int, per_seq: float, *, scatter: float = 0.0, gather: float = 0.0,
                        latency: float = 0.0, allreduce: float | None = None, steps: int = 1) -> TaskGraph:
    """``P`` ranks each run ``ceil``-split shares of ``batch`` sequences (``per_seq`` each). Inference:
    rank 0 sends each rank its share (``scatter`` s per sequence + ``latency`` per message) and gathers
    the results. Training (``allreduce`` given, s per step): ``steps`` steps, each ending with a
    tree allreduce of the gradients (``2 ceil(log2 P)`` rounds of ``latency + allreduce / ...``)."""
    batch = check_positive_int(batch, "batch")
    P = check_positive_int(P, "P")
    steps = check_positive_int(steps, "steps")  # also without allreduce (where it is not used): never silently
    _check_costs(per_seq=per_seq, scatter=scatter, gather=gather, latency=latency)
    if allreduce is not None:
        _check_costs(allreduce=allreduce)
        steps = check_positive_int(steps, "steps")
        k = min(batch, P)
        phases = steps * (1 + 2 * math.ceil(math.log2(k)) if k > 1 else steps)
        _check_graph_size(phases * k, phases * k * k, "P" if k * k > steps else "steps")
    else:
        _check_graph_size(3 * min(batch, P), 4 * min(batch, P), "P")
    shares = _split(batch, P)
    g = TaskGraph(f"data-parallel B={batch} P={P}")
    prev: list[str] = []
    if allreduce is None:
        sends = [g.add(f"send{i}", latency + scatter * shares[i], [], kind="comm", proc=0) if i else None
                 for i in range(len(shares))]
        comp = []
        for i, s in enumerate(shares):
            deps = [sends[i]] if sends[i] else []
            comp.append(g.add(f"rank{i}", per_seq * s, deps, proc=i))
        last = comp[0]
        for i in range(1, len(shares)):
            last = g.add(f"recv{i}", latency + gather * shares[i], [comp[i], last], kind="comm", proc=0)
        return g
    rounds = 2 * math.ceil(math.log2(len(shares))) if len(shares) > 1 else 0
    for s in range(check_positive_int(steps, "steps")):
        prev = _phase(g, f"step{s}", [per_seq * k for k in shares], prev)
        for r in range(rounds):
            prev = _phase(g, f"step{s}/allreduce{r}", [latency + allreduce / max(rounds, 1)] * len(shares), prev,
                          kind="comm")
    return g


# --------------------------------------------------------------------------- chapter 10
def mgrit_graph(nt: int, *, m: int = 4, levels: int = 2, iters: int = 2, P: int = 1, relax: str = "FCF",
                step: float = 1.0, latency: float = 0.0) -> TaskGraph:
    """MGRIT V-cycles phase by phase, as :class:`course_lib.algorithms.mgrit.MGRIT` runs them: each
    sweep (F-relaxation, C-relaxation/residual with a boundary exchange of ``latency``, forming the
    coarse right-hand side) gives each of ``min(P, C_l)`` processors its block of C-intervals; every
    phase waits for the previous one; the coarsest level is a serial march. ``step`` = cost of one
    time step. The first iteration also runs the leading F-sweep (and, for ``"F"``, a residual)."""
    nt = check_positive_int(nt, "nt")
    # up front: levels - 1 <= log_m(nt / 2) <= log2(nt) (else m**(levels-1) alone is a huge number to compute)
    levels = check_int(levels, "levels", low=1, high=max(1, nt.bit_length()))
    sizes = hierarchy(nt, m, levels)
    P = check_positive_int(P, "P")
    iters = check_positive_int(iters, "iters")
    check_choice(relax, "relax", RELAXATIONS)
    step = check_float(step, "step", low=0.0)
    latency = check_float(latency, "latency", low=0.0)
    k = min(P, max(1, sizes[0] // m))
    phases = 2 + iters * (len(sizes) - 1) * (len(relax) + 4)
    _check_graph_size(phases * k, phases * k * k, "P" if k * k > iters else "iters")
    g = TaskGraph(f"MGRIT nt={nt} m={m} L={levels} P={P}")
    if levels == 1:
        g.add("march", nt * step, kind="serial", proc=0)
        return g
    n_f, n_c = relax.count("F"), relax.count("C")
    prev: list[str] = []
    k = 0

    def sweep(tag, lv, per_interval, exch):
        nonlocal prev, k
        c = sizes[lv] // m
        prev = _phase(g, f"{k}:{tag}@L{lv}", [b * per_interval * step + exch for b in _split(c, P)], prev)
        k += 1

    sweep("F", 0, m - 1, 0.0)  # the leading F-sweep
    if n_c == 0:
        sweep("residual", 0, 1, latency)
    for _ in range(iters):
        for lv in range(len(sizes) - 1):
            nf = n_f if lv == 0 else n_f + 1
            ncs = (n_c + 1 + (1 if n_c else 0)) if lv == 0 else n_c + 1
            # the count of sweeps is what matters for the critical path and the work; their order is MGRIT's
            for _ in range(nf):
                sweep("F", lv, m - 1, 0.0)
            for _ in range(ncs):
                sweep("C", lv, 1, latency)
            sweep("gc", lv, 1, 0.0)
        prev = [g.add(f"{k}:coarse march", sizes[-1] * step, prev, kind="serial", proc=0)]
        k += 1
    return g


# --------------------------------------------------------------------------- chapter 11
def deer_graph(T: int, nh: int, *, iters: int, P: int = 1, method: str = "newton",
               step_flops: float | None = None) -> TaskGraph:
    """``iters`` DEER iterations on ``P`` processors, costs in flops (as
    :func:`course_lib.algorithms.newton.span_model` counts them): evaluate f and its Jacobian at every
    t (split over P), then the chunked matrix scan -- reduce each chunk (matrix-matrix combines), a
    tree over the chunk results (``2 ceil(log2 P)`` combines, serial), expand each chunk (matrix-vector)."""
    T = check_positive_int(T, "T")
    nh = check_positive_int(nh, "nh")
    iters = check_positive_int(iters, "iters")
    P = check_positive_int(P, "P")
    check_choice(method, "method", ("newton", "quasi", "damped"))
    c = 6.0 * nh * nh + 20.0 * nh if step_flops is None else check_float(step_flops, "step_flops", low=0.0)
    jac = 20.0 * nh if method == "quasi" else 6.0 * nh * nh
    cb = 1 if method == "quasi" else nh
    nb = nh if method == "quasi" else 1
    k = min(T, P)
    phases = iters * (3 + 2 * math.ceil(math.log2(k)) if k > 1 else 3 * iters)
    _check_graph_size(phases * k, phases * k * k, "P" if k * k > iters else "iters")
    matvec = 2.0 * cb * cb * nb
    matmat = 2.0 * cb ** 3 * nb + matvec
    shares = _split(T, P)
    tree = 2 * math.ceil(math.log2(len(shares))) if len(shares) > 1 else 0
    g = TaskGraph(f"DEER T={T} H={nh} P={P} {method}")
    prev: list[str] = []
    for it in range(iters):
        prev = _phase(g, f"it{it}/f+J", [s * (c + jac + nh) for s in shares], prev)
        prev = _phase(g, f"it{it}/reduce", [s * matmat for s in shares], prev)
        for r in range(tree):
            prev = [g.add(f"it{it}/tree{r}", matmat, prev, kind="serial", proc=0)]
        prev = _phase(g, f"it{it}/expand", [s * matvec for s in shares], prev)
    return g


# --------------------------------------------------------------------------- chapter 08
def hillis_steele_graph(T: int, combine: float = 1.0) -> TaskGraph:
    """One task per combine of the Hillis-Steele scan: at round d element i combines with i - 2^d."""
    T = check_positive_int(T, "T")
    _check_costs(combine=combine)
    lv = (T - 1).bit_length()
    _check_graph_size(T * lv, 2 * T * lv, "T")
    g = TaskGraph(f"Hillis-Steele T={T}")
    cur = {i: None for i in range(T)}  # latest task that wrote element i
    d = 0
    while (1 << d) < T:
        nxt = dict(cur)
        for i in range(1 << d, T):
            deps = [x for x in (cur[i], cur[i - (1 << d)]) if x is not None]
            nxt[i] = g.add(f"r{d}/{i}", combine, deps)
        cur = nxt
        d += 1
    return g


def blelloch_graph(T: int, combine: float = 1.0) -> TaskGraph:
    """One task per combine of Blelloch's scan (padded to n = 2^ceil(log2 T)): up-sweep (a tree of
    n-1 combines) then down-sweep (n-1 combines), each level waiting for the one before."""
    T = check_positive_int(T, "T")
    _check_costs(combine=combine)
    _check_graph_size(4 * T, 8 * T, "T")
    levels = math.ceil(math.log2(T)) if T > 1 else 0
    n = 1 << levels
    g = TaskGraph(f"Blelloch T={T} (n={n})")
    last = {i: None for i in range(n)}
    for d in range(levels):  # up-sweep: node i (right end of a 2^(d+1) block) combines with its left half
        s = 1 << (d + 1)
        for i in range(s - 1, n, s):
            j = i - (1 << d)
            deps = [x for x in (last[i], last[j]) if x is not None]
            last[i] = g.add(f"up{d}/{i}", combine, deps)
    for d in reversed(range(levels)):  # down-sweep: swap-and-combine, one combine per pair
        s = 1 << (d + 1)
        for i in range(s - 1, n, s):
            j = i - (1 << d)
            deps = [x for x in (last[i], last[j]) if x is not None]
            t = g.add(f"down{d}/{i}", combine, deps)
            last[i] = last[j] = t
    return g


def chunked_scan_graph(T: int, P: int, *, reduce: float, carry: float, expand: float, launch: float = 0.0,
                       first_full: bool = False) -> TaskGraph:
    """The reduce -> scan of carries -> expand scan of ``T`` steps split into ``P`` chunks. Costs per
    *step*: ``reduce`` and ``expand`` per step of a chunk, ``carry`` per chunk of the carries' scan;
    ``launch`` per phase (a kernel launch on a GPU, a fork-join on a CPU)."""
    T = check_positive_int(T, "T")
    P = check_positive_int(P, "P")
    _check_costs(reduce=reduce, carry=carry, expand=expand, launch=launch)
    check_bool(first_full, "first_full")
    _check_graph_size(2 * min(T, P) + 4, 3 * min(T, P) + 4, "P")
    shares = _split(T, P)
    g = TaskGraph(f"chunked scan T={T} P={P}")
    prev: list[str] = []
    if launch:
        prev = [g.add("launch reduce", launch, [], kind="launch", proc=0)]
    prev = _phase(g, "reduce", [s * reduce for s in shares], prev)
    if launch:
        prev = [g.add("launch carries", launch, prev, kind="launch", proc=0)]
    prev = [g.add("carries", carry * len(shares), prev, kind="serial", proc=0)]
    if launch:
        prev = [g.add("launch expand", launch, prev, kind="launch", proc=0)]
    _phase(g, "expand", [s * expand for s in shares], prev)
    return g


# --------------------------------------------------------------------------- chapters 05/06
def threads_step_graph(T: int, P: int, *, parallel_part: float, serial_part: float = 0.0,
                       barrier: float = 0.0) -> TaskGraph:
    """A loop of ``T`` steps, each a ``parallel_part`` (s of one-core work) split over ``P`` threads,
    then a ``barrier`` and a ``serial_part`` on one thread (Amdahl's fraction)."""
    T = check_positive_int(T, "T")
    P = check_positive_int(P, "P")
    _check_costs(parallel_part=parallel_part, serial_part=serial_part, barrier=barrier)
    _check_graph_size(T * (P + 1), T * P * P + T * P, "T" if T >= P * P else "P")
    g = TaskGraph(f"threads T={T} P={P}")
    prev: list[str] = []
    for t in range(T):
        prev = _phase(g, f"t{t}", [parallel_part / P] * P, prev)
        if barrier or serial_part:
            prev = [g.add(f"t{t}/serial", barrier + serial_part, prev, kind="serial", proc=0)]
    return g

