"""mau.collect."""
