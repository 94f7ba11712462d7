"""mau.train."""
