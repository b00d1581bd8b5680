"""Tests of course_lib/models/: test_<module>.py tests course_lib/models/<module>.py."""
