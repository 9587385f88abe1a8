"""simkit: a deterministic simulator and property-testing harness for the
Encrypted Record Sync Relay protocol."""

__version__ = "0.1.0"
