"""followers."""
