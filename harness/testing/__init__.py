"""Infrastructure for tests and benchmarks that ships with the package (fault-injecting servers)."""
