"""The model of annotation: what each pair truly is, and how each annotator answers."""
