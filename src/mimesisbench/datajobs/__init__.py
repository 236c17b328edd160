"""Data jobs: IOR-like writers and readers run beside the metadata replay, and their call traces."""
