"""Tests of the storage initiator (apps/initiator) and the comch control channel."""
