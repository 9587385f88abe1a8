"""simkit.check: every short history of a small world, on the real implementation.

A *scope* (``simkit.check.scope``, a TOML file) names a fuzz world and an alphabet of
typed fuzz steps; ``simkit.check.search`` runs every sequence of up to K of them from
the world's setup, each judged after every step and at quiescence by every invariant
and both models, breadth first, so the first violation found is a shortest one. Worlds
are copied at each prefix (``simkit.fuzz.snapshot``) instead of replayed.
"""
