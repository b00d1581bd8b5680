"""Tests of course_lib/algorithms/: test_<module>.py tests course_lib/algorithms/<module>.py."""
