"""Run by tests/routes/run_routes.sh with the Python of a freshly built route (devcontainer or Binder):
is the course usable there? Imports, the kernel spec, and the server settings JupyterLab would start with.

    python check_env.py ROUTE [--config FILE]     (--config: the file `make lab` passes; without it the
                                                 environment's own jupyter_server_config.json must hold them)
"""
import argparse
import importlib
import json
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("route")
    parser.add_argument("--config")
    args = parser.parse_args()
    problems = []
    for name in ("course_lib", "numba", "halide", "ipywidgets", "jupyterlab"):
        try:
            importlib.import_module(name)
        except Exception as exc:  # any failure to import is reported
            problems.append(f"import {name}: {type(exc).__name__}: {exc}")

    from jupyter_client.kernelspec import KernelSpecManager

    specs = KernelSpecManager().get_all_specs()
    spec = specs.get("python3")
    if spec is None:
        problems.append(f"no kernel spec 'python3' (found {sorted(specs)})")
    else:
        where = Path(spec["resource_dir"]).resolve()
        if not where.is_relative_to(Path(sys.prefix).resolve()):
            problems.append(f"kernel spec 'python3' is in {where}, not in this environment ({sys.prefix})")
        if spec["spec"]["display_name"] != "Python 3":
            problems.append(f"kernel display name {spec['spec']['display_name']!r}, expected 'Python 3'")

    from jupyter_server.serverapp import ServerApp

    app = ServerApp()
    argv = ["--ServerApp.open_browser=False", "--ServerApp.port=0"] + ([f"--config={args.config}"] if args.config else [])
    app.initialize(argv=argv)
    hook = app.contents_manager.pre_save_hook
    if getattr(hook, "__name__", None) != "keep_lecture_outputs":
        problems.append(f"the server's pre_save_hook is {hook!r}, not course_lib.teaching.lab.keep_lecture_outputs")
    if "[0-9][0-9]_*.py" not in app.contents_manager.hide_globs:
        problems.append(f"the server hides {app.contents_manager.hide_globs}, not the notebooks' .py sources")
    import course_lib

    print(json.dumps({"route": args.route, "python": sys.version.split()[0], "prefix": sys.prefix,
                      "course_lib": course_lib.__version__, "problems": problems}))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
