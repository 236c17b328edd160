"""Monitoring while a benchmark runs: server-side metrics (``jmx``: the NameNode's JMX servlet)
and live client-side metrics (``live``, ``prometheus``)."""
