"""Studies: many runs planned and judged together (the capacity of a server for a workload;
designed experiments come here with their runner)."""
