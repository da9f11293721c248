"""Collection: vector-env stepping, warm-up, action noise, episode statistics and buffer writes."""
