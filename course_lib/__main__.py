"""Command line: ``python -m course_lib COMMAND``.

  report                         what this machine has (cores, BLAS, numba, GPU/simulator, MPI)
  notebooks [--execute] [--only NN]
                                 write notebooks/ and solutions/ .ipynb from their .py pairs
                                 (--execute runs them afresh; otherwise outputs are kept; first
                                 rewrites their generated header/setup/footer cells), then
                                 rebuild exercises/
  exercises build [--force] [--only NN]
                                 generate exercises/ from solutions/ (never overwrites a
                                 worksheet a student edited without --force, which keeps a backup)
  grade [--exercises] [--only NN]
                                 run the solution worksheets (and the exercise worksheets) headless
                                 and print a pass/fail table
  export --nbgrader DIR [--only NN[,MM]] [--force] [--points N.k=P ...]
                                 write an nbgrader course (DIR/source/NN_slug/ from solutions/,
                                 DIR/nbgrader_config.py): checks become autograded test cells,
                                 1 point per exercise unless --points says otherwise. A DIR that
                                 is not empty is refused without --force, which rewrites only
                                 the exported chapters' source notebooks (gradebook.db, submitted/ kept)
  replay DIR [DIR ...] [--against QUIET_DIR]
                                 re-render every verdict recorded with COURSE_RECORD=DIR (a folder of
                                 <notebook>.json, or a folder of such folders, e.g. recordings/) with
                                 the current code; print verdicts concluded / abstained / contradicted
                                 per notebook and every contradiction; exit 1 if there is one
  constraints [--write] [--python PY]
                                 check constraints.txt (the known-good versions) against pyproject.toml;
                                 --write regenerates it from PY's environment (pip freeze)
  lab [--port N] [--dry-run]     register the kernel and start JupyterLab on 127.0.0.1 (make lab without make)

For students (your own copy, which git does not track):
  start [--dir my-work]          copy the worksheets of exercises/ into my-work/ (never over a file there)
  progress [--dir my-work] [--only NN]
                                 run your worksheets quietly in a fresh kernel, nothing written back: per
                                 exercise passed (with the speed-up measured) / failing / not started
  update [--dir my-work] [--only NN]
                                 after a git pull: carry your answers into the new worksheet versions
                                 (a backup first, in my-work/.backup/); lists exercises whose statement changed
"""
from __future__ import annotations

import argparse
import sys


def _cmd_report(_args) -> int:
    from .core import backend

    print(backend.report())
    return 0


def _cmd_notebooks(args) -> int:
    from .teaching import authoring, chapters, record

    for py in chapters.apply_headers(only=args.only):  # the generated header/setup/footer cells, from the table
        print(f"headers  {py.parent.name}/{py.name} (generated cells rewritten)")
    failed = 0
    for folder in authoring.FOLDERS:
        for py, ipynb in authoring.notebook_pairs(folder):
            if args.only and not py.name.startswith(args.only) and args.only not in py.name:
                continue
            try:
                secs = authoring.sync_notebook(py, ipynb, execute=args.execute, timeout=args.timeout)
                print(f"{'executed' if args.execute else 'synced  '} {folder}/{ipynb.name}  ({secs:.1f} s)")
                if args.execute and record.directory() is not None:  # the run time, for the chapter headers
                    chapters.record_time(record.directory(), f"{folder}/{py.stem}", secs)
            except Exception as exc:
                failed += 1
                print(f"FAILED   {folder}/{ipynb.name}: {type(exc).__name__}: {str(exc)[:2000]}")
    if not args.no_exercises:
        failed += _build(force=False, only=args.only)
    return 1 if failed else 0


def _build(force: bool, only: str | None) -> int:
    from .teaching import authoring

    refused = 0
    for r in authoring.build_exercises(force=force, only=only):
        print(f"exercises/{r.path.name}: {r.status}")
        refused += r.status.startswith(("refused", "failed"))
    return 1 if refused else 0


def _cmd_exercises(args) -> int:
    if args.action != "build":
        print(f"unknown action {args.action!r}; expected 'build'", file=sys.stderr)
        return 2
    return _build(force=args.force, only=args.only)


def _cmd_grade(args) -> int:
    from .teaching import authoring
    from .teaching.notebook_io import checkout

    folders = ["solutions"] + (["exercises"] if args.exercises else [])
    print("PASS: a solution notebook ran with every check passing.  RUNS: an unsolved worksheet ran to the end,\n"
          "stopping only at its exercises' NotImplementedError placeholders.  FAIL: any other error (shown).")
    rows = []
    for folder in folders:
        for path in sorted((checkout(folder) / folder).glob("[0-9][0-9]_*.ipynb")):
            if args.only and args.only not in path.name:
                continue
            rows.append(authoring.run_notebook_report(path, timeout=args.timeout))
            r = rows[-1]
            if folder == "exercises":
                bad = [e for e in r["errors"] if "NotImplementedError" not in e]
                status = "RUNS" if not bad else "FAIL"
            else:
                status = "PASS" if not r["errors"] else "FAIL"
            r["status"] = status
            print(f"{status}  {r['notebook']:<40} {r['seconds']:6.1f} s  checks passed: {r['checks_passed']:>2}"
                  + (f"  errors: {'; '.join(r['errors'])[:200]}" if r["errors"] and status == "FAIL" else ""))
    counts = {k: sum(r["status"] == k for r in rows) for k in ("PASS", "RUNS", "FAIL")}
    total = sum(r["seconds"] for r in rows)
    print(f"{len(rows)} notebooks in {total:.0f} s: " + ", ".join(f"{n} {k}" for k, n in counts.items() if n or k == "FAIL")
          + ("" if counts["FAIL"] else " -- all good"))
    return 0 if all(r["status"] != "FAIL" for r in rows) else 1


def _points_arg(text: str) -> tuple[str, float]:
    exercise, sep, value = text.partition("=")
    try:
        if not sep or not exercise.strip():
            raise ValueError
        points = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected EXERCISE=POINTS such as 1.2=3, got {text!r}") from None
    return exercise.strip(), int(points) if points.is_integer() else points


def _cmd_export(args) -> int:
    from .teaching import nbgrader_export

    try:
        r = nbgrader_export.export_nbgrader(args.nbgrader, only=args.only, force=args.force,
                                            points=dict(args.points or []))
    except (FileExistsError, ValueError, TypeError) as exc:
        print(f"export: {exc}", file=sys.stderr)
        return 2
    for name, exercises in r.assignments.items():
        total = sum(exercises.values())
        print(f"source/{name}/{name}.ipynb: {len(exercises)} exercises, {total:g} points "
              f"({', '.join(f'{k}: {v:g}' for k, v in exercises.items())})")
    print(f"nbgrader_config.py: {r.config}")
    for w in r.warnings:
        print(f"warning: {w}")
    print(f"nbgrader course in {r.root}; next, from there (course environment active): "
          "nbgrader generate_assignment NN_slug")
    return 0


def _cmd_replay(args) -> int:
    from .teaching import replay

    return replay.main(args.dirs, against=args.against)


def _cmd_constraints(args) -> int:
    from .teaching import constraints

    if args.write:
        path = constraints.write(python=args.python)
        print(f"wrote {path} ({len(constraints.read_pins(path))} pins from {args.python})")
    bad = constraints.disagreements()
    print("\n".join(bad) if bad else "constraints.txt agrees with pyproject.toml")
    return 1 if bad else 0


def _cmd_lab(args) -> int:
    from .teaching import launch

    return launch.main(port=args.port, dry_run=args.dry_run)


def _cmd_student(args) -> int:
    from .teaching import workbook_cli

    return workbook_cli.main(args)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_lib", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("report", help="what this machine has").set_defaults(fn=_cmd_report)
    p = sub.add_parser("notebooks", help="sync (and execute) notebook pairs, then rebuild exercises")
    p.add_argument("--execute", action="store_true", help="run every notebook afresh")
    p.add_argument("--only", help="only notebooks whose name contains this (e.g. 03)")
    p.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    p.add_argument("--no-exercises", action="store_true", help="do not rebuild exercises/")
    p.set_defaults(fn=_cmd_notebooks)
    p = sub.add_parser("exercises", help="generate exercises/ from solutions/")
    p.add_argument("action", choices=["build"])
    p.add_argument("--force", action="store_true", help="overwrite edited worksheets (keeps a backup)")
    p.add_argument("--only", help="only worksheets whose name contains this")
    p.set_defaults(fn=_cmd_exercises)
    p = sub.add_parser("grade", help="run worksheets headless and print a pass/fail table")
    p.add_argument("--exercises", action="store_true", help="also run the student worksheets")
    p.add_argument("--only", help="only worksheets whose name contains this")
    p.add_argument("--timeout", type=int, default=600)
    p.set_defaults(fn=_cmd_grade)
    p = sub.add_parser("export", help="write the worksheets as an nbgrader course")
    p.add_argument("--nbgrader", required=True, metavar="DIR", help="the nbgrader course folder to write")
    p.add_argument("--only", help="only chapters whose name contains this (comma-separated for several)")
    p.add_argument("--force", action="store_true",
                   help="write into a non-empty DIR: rewrites only the exported chapters' source notebooks")
    p.add_argument("--points", action="append", type=_points_arg, metavar="N.k=P",
                   help="points of exercise N.k (default 1); repeat for several")
    p.set_defaults(fn=_cmd_export)
    p = sub.add_parser("replay", help="re-render and check recorded verdicts (COURSE_RECORD runs)")
    p.add_argument("dirs", nargs="+", metavar="DIR", help="a recording folder, or a folder of them")
    p.add_argument("--against", metavar="QUIET_DIR", help="also list concluded verdicts that differ from this run's")
    p.set_defaults(fn=_cmd_replay)
    p = sub.add_parser("constraints", help="check (or --write) constraints.txt, the known-good versions")
    p.add_argument("--write", action="store_true", help="regenerate constraints.txt from --python's environment")
    p.add_argument("--python", default=sys.executable, help="the interpreter whose packages to pin (default: this one)")
    p.set_defaults(fn=_cmd_constraints)
    p = sub.add_parser("lab", help="register the kernel and start JupyterLab (make lab without make)")
    p.add_argument("--port", type=int, default=8888, help="the port to serve on (default 8888)")
    p.add_argument("--dry-run", action="store_true", help="print the steps and the command, start nothing")
    p.set_defaults(fn=_cmd_lab)
    for name, text in (("start", "copy the worksheets into your own folder (my-work/)"),
                       ("progress", "which of your exercises pass, fail or are not started"),
                       ("update", "carry your answers into a new course version (keeps a backup)")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--dir", default="my-work", help="your folder of worksheets (default: my-work)")
        if name != "start":
            p.add_argument("--only", help="only worksheets whose name contains this (e.g. 08)")
        if name == "progress":
            p.add_argument("--timeout", type=int, default=600, help="seconds per cell")
        p.set_defaults(fn=_cmd_student)
    args = parser.parse_args(argv)
    from .teaching.notebook_io import NeedsCheckout

    try:
        return args.fn(args)
    except NeedsCheckout as exc:   # an instructor command run from an installed course
        print(f"python -m course_lib {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
