"""What the storage apps' processes share at run time beyond `apps.common.runtime`: the bridges' control
phase, data-path skeleton and ``main``, and offload batches."""
