"""Robot models: the immutable Model, its builder, parsers, bundled and synthetic robots."""
