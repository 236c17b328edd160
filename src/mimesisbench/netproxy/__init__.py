"""Network latency in front of a real server: a managed toxiproxy between the clients and it."""
