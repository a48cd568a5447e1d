"""Hardware profiles: the contract every domain reads (schema, models, discovery, registry, resolution)."""
