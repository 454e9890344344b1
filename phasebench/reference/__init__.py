"""Small reference models with and without chunked KV compression."""
