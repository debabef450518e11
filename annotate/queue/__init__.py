"""The labelling step: which pair an annotator gets next (rules, full rules, SQL, gold checks)."""
