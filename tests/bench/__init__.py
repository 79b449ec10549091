"""make bench (python3 -m tests.bench): figures timed in interleaved pairs with their references."""
