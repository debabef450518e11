"""Studies: their options, the pairs files they import, annotations imported, the demo."""
