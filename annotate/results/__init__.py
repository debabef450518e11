"""A study's results read from the database: report, exports, monitoring."""
