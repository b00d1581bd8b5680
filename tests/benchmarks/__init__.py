"""Smoke tests of the benchmark scripts: test_<script>.py runs benchmarks/<script>.py --quick."""
