"""Signals from a request: token counts and content kinds (complexity and privacy to come)."""

from classifiers.signals import Signals, compute_signals

__all__ = ["Signals", "compute_signals"]
