"""The ``lens`` command: the root app (:mod:`.app`), how the process ends (:mod:`.lifetime`),
``lens version`` (:mod:`.version`), the CLI's words (:mod:`.words`) and docs/cli.md (:mod:`.docs`).

Assembly floor: it mounts every domain's ``cli.py`` and imports nothing until a command runs.
"""
