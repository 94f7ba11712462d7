"""mau.datasets."""
