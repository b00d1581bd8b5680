"""Tests of course_lib/core/: test_<module>.py tests course_lib/core/<module>.py."""
