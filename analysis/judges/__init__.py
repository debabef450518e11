"""Reward models and judges against the humans: their files, accuracy and tables."""
