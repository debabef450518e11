"""Storage: the engine, the schema and its migrations, the tables. Imports nothing above it."""
