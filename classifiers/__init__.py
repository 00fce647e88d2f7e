"""Signals from a request: complexity, privacy findings, token estimate, language."""

from classifiers.signals import PrivacyFinding, Scorer, Signals

__all__ = ["PrivacyFinding", "Scorer", "Signals"]
