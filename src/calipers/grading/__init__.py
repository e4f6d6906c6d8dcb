"""Grading: assertions (each type mapped to one layer) and, later, judges."""
