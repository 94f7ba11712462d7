"""mau.harness."""
