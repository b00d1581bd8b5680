"""The tests (a package, so that same-named files in different folders do not clash: tests.algorithms.test_scan
and tests.experiments.test_scan). tests/<folder>/test_<module>.py tests course_lib/<folder>/<module>.py."""
