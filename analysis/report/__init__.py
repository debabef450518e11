"""The report: built from the tables, its shape, and the files it is written to."""
