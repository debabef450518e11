"""The whole benchmark from a labelled sample: the draw, the estimates, the sample size."""
