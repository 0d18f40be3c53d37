"""The durable client side."""
