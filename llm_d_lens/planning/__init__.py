"""Planning: which model fits on which hardware the cluster has, and with what parallelism."""
