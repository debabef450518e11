"""Agreement between annotators: the coefficients, their intervals, each annotator's quality."""
