"""Tests of course_lib/teaching/ (checks/ mirrors course_lib/teaching/checks/)."""
