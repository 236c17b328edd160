"""The simulated NameNode (``simnn:``): a queueing model of one NameNode, replayed in virtual time.

``model`` holds the typed parameters (a server's settings, each operation's costs, a calibration
and its JSON form); ``calls`` turns a sequence of operations into per-call arrays (the seeded
draws); ``engine`` simulates them (the native event loop, or ``reference``, the same model in
simpy); ``ops`` simulates a sequence of operations (``run.virtual`` gives it a schedule's) or a
micro-benchmark; ``fit`` fits the costs to measurements on a real NameNode
(``study.simnn_calibration`` makes them), and ``fit_check`` names what the fitted model misses of
them.
"""
