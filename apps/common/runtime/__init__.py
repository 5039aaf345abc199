"""What every app's processes share at run time: worker threads and their sleep on the ``Pe``, signal
handling, device opening, statistics, live statistics and the retry log."""
