"""Synthesis: namespace and schedule generation from a workload profile and a seed.

Modules (one job each):

* ``format``: compatibility names; the schedule format lives in ``mimesisbench.schedule``;
* ``options``: ``GenerateOptions`` and ``effective_profile`` (options applied to a profile);
* ``scaling``: ``scale_files``, ``scale_type``, ``scale_time``, ``scale_span``, ``isolate``;
* ``namespace``: directory trees (synthetic, explicit, flat), type parts, file placement;
* ``streams``: the per-type renewal-process model (creates, accesses, deletes), vectorised;
* ``shared_ops``: MKDIRS, renames, GETFILEINFO and LIST_DIR at the op-mix ratios;
* ``schedule``: ``generate_schedule(profile, options, seed, tree) -> GeneratedSchedule``;
* ``store``: a ``GeneratedSchedule`` through the one atomic writer (``mimesisbench.schedule``);
* ``pipeline``: profile file -> schedule directory (the ``generate`` verb as a call);
* ``check``: ``check_schedule`` replays a schedule against a set-based namespace model;
* ``audit``: ``schedule_to_events`` and ``export_audit`` (NameNode audit-log format);
* ``features``, ``kstats``, ``fidelity``: ``validate_profile`` and ``validate_trace``.
"""
