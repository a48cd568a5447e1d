"""Per-pod serving metrics (KV cache, running and waiting requests) read by pod labels."""
