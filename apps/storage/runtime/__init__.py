"""What the storage apps' processes share at run time: worker threads, the bridges' control phase and
data-path skeleton, signal handling, device opening, offload batches and statistics."""
