"""Tests of the storage apps (apps/storage and apps/sbc_generator)."""
