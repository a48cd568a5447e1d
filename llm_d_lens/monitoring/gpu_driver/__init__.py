"""Device plugins and DRA drivers: pinned installs, status, presence preflight, device-stack plans."""
