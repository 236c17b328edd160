"""Trace ingestion: every parser yields the canonical event table defined in ``events``."""
