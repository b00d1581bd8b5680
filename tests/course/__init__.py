"""Tests of the course as a whole: notebooks, exercises, markdown, layers, markers, environment.yml, the CLI,
the nbgrader export, and property tests that compare whole pipelines across the library."""
