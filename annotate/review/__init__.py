"""Reviewing contested pairs: decisions (keep, drop, revise) and their files."""
