"""``python -m llm_d_lens.cli ARGS``: the ``lens`` command, returning in-process (no ``os._exit``)."""

from llm_d_lens.cli.app import main

raise SystemExit(main())
