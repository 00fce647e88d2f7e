"""Signals + policy + live state -> a decision, and running it: fallback, streaming."""
