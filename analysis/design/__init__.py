"""A study's design: adaptive overlap's stopping rule and planning before recruiting."""
