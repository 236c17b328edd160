"""The two-phase run: phase 1 builds the namespace, phase 2 replays the schedule in real time."""
