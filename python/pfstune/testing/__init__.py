"""Conformance suites that every backend, tuner and model implementation must pass."""
