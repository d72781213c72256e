"""Loading torch.profiler (Kineto) Chrome traces into event tables. Never imports torch."""
