"""sparse."""
