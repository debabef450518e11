"""Input and output files: strict parsing, Parquet limits, CSV cells, the annotations table."""
