"""Command lines of the storage apps: DOCA-argp-style parsing, the configuration models and man pages."""
