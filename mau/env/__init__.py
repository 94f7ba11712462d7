"""mau.env."""
