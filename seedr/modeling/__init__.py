"""The encoder (the product) and the auxiliary modules objectives attach to it."""
