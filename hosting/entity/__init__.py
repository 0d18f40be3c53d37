"""The agent entity."""
