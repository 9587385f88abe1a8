"""Swarm testing (Groce et al.): each example enables a subset of the optional rules
(``WorldParams.rules``), and ``classic`` work leaves out what commit 685eb33's
machines did not have (so that ``simkit bench fuzz`` compares equal work)."""

from hypothesis.stateful import precondition


def swarm(name: str):
    """A rule this example may leave out (``WorldParams.rules``)."""
    return precondition(lambda self: self.params is not None and self.params.enabled(name))


def since_classic(method):
    """A rule commit 685eb33's machines did not have: ``classic`` work leaves it out, so
    that ``simkit bench fuzz`` compares equal work."""
    return precondition(lambda self: not self.classic)(method)
