"""Tests of course_lib/parallel/: test_<module>.py tests course_lib/parallel/<module>.py."""
