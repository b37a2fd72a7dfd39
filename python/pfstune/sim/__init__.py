"""Simulation: scenario files, cluster presets, the engine wrapper and the virtual client tree."""
