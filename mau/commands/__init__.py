"""mau.commands."""
