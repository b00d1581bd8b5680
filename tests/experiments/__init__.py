"""Tests of course_lib/experiments/: test_<module>.py tests course_lib/experiments/<module>.py."""
