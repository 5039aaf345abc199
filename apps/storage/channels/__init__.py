"""Control channels of the storage apps: framed control messages over TCP or a comch connection (spec §3.1)."""
