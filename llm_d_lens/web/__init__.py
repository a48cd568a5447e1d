"""HTTP helpers every domain's ``api.py`` edge shares: answers encoded once with their ``ETag``
(:mod:`.conditional`) and errors worded in the request's fields (:mod:`.request_fields`). Kernel floor."""
