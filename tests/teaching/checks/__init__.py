"""Tests of the chapter graders, course_lib/teaching/checks/: test_<module>.py tests checks/<module>.py."""
