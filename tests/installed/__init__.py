"""The course as an installed package: run_installed.py (make test-installed) and what the wheel must carry."""
