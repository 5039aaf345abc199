"""Tests of python -m apps.storage_target."""
