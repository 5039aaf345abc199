"""What every app's processes share at run time: worker threads and their sleep on the ``Pe``, signal
handling, device opening, statistics, live statistics, the retry log, and what the DOCA version in use
offers (``doca_features``)."""
