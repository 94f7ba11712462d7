"""mau.eval."""
