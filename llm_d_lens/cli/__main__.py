"""``python -m llm_d_lens.cli ARGS``: the ``lens`` command, returning in-process (no ``os._exit``)."""

from llm_d_lens.cli.app import main

try:
    code = main()
except KeyboardInterrupt:  # Ctrl-C outside the command layer's own handling: 128 + SIGINT, no traceback
    code = 130
raise SystemExit(code)
