"""mau: behaviour cloning of a crewmate deception detector in an embodied Among Us world."""

__version__ = "0.1.0"
