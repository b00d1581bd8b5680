"""What ``python -m course_lib start | progress | update`` print (teaching folder); the work is in :mod:`.workbook`."""
from __future__ import annotations

import sys
from pathlib import Path

from . import workbook

__all__ = ["main", "cmd_start", "cmd_progress", "cmd_update"]


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def cmd_start(folder: str, root: Path | None = None) -> int:
    done = workbook.start(folder, root=root)
    for name, status in done:
        print(f"{name}: {status}")
    where = _shown(Path(folder))
    print(f"Your worksheets are in {where}/ (git does not track it: git pull never touches your answers).\n"
          f"Open them in JupyterLab (make lab, then {where}/ in the file browser); check your work with "
          f"`python -m course_lib progress --dir {folder}`.")
    return 0


def cmd_progress(folder: str, only: str | None = None, timeout: int = 600) -> int:
    try:
        paths = workbook.worksheets(folder, only)
    except FileNotFoundError as exc:
        print(f"progress: {exc}", file=sys.stderr)
        return 2
    if not paths:
        print(f"progress: no worksheet (NN_slug.ipynb) in {_shown(Path(folder))}"
              + (f" whose name contains {only!r}" if only else "") + "; `python -m course_lib start` copies them there")
        return 0
    print(f"Running {len(paths)} worksheet(s) from {_shown(Path(folder))}/ in a fresh kernel (your files are not "
          "changed; speed checks take a while) ...", flush=True)
    totals = {"passed": 0, "all": 0}

    def report(name, statuses, problem):
        print(workbook.format_progress(name, statuses, problem), flush=True)
        totals["passed"] += sum(s.status == "passed" for s in statuses)
        totals["all"] += len(statuses)

    workbook.progress(folder, only, timeout=timeout, report=report)
    print(f"{totals['passed']} of {totals['all']} exercises done")
    return 0


def cmd_update(folder: str, only: str | None = None, root: Path | None = None) -> int:
    print("Close your worksheets in JupyterLab first (an open, unsaved worksheet would write its old version back).")
    try:
        results = workbook.update(folder, root=root, only=only)
    except FileNotFoundError as exc:
        print(f"update: {exc}", file=sys.stderr)
        return 2
    for r in results:
        line = f"{r.path.name}: {r.status}"
        if r.status.startswith("updated"):
            mine = [f"{r.carried} answer(s) carried into their exercise"] * bool(r.carried) + \
                   [f"{r.kept} cell(s) of yours kept in place"] * bool(r.kept)
            line += f" ({', '.join(mine) or 'nothing of yours to carry'}; backup: {_shown(r.backup)})"
        print(line)
        if r.leftover:
            print(f"  answers to {', '.join(r.leftover)} have no exercise any more: they are at the end, under "
                  f"'{workbook.CARRIED_HEADING[3:]}'")
        for ex, what in r.changed.items():
            print(f"  Exercise {ex}: {what}")
            for bullet in workbook.changelog_mentions(ex, root=root):
                print(f"    CHANGELOG: {bullet}")
    return 0


def main(args) -> int:
    folder = args.dir
    if args.command == "start":
        return cmd_start(folder)
    if args.command == "progress":
        return cmd_progress(folder, args.only, args.timeout)
    return cmd_update(folder, args.only)
