"""Tests of course_lib/data/: test_<module>.py tests course_lib/data/<module>.py."""
