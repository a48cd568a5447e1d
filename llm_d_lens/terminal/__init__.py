"""What a command prints: the ``-o`` formats and tables (:mod:`.output`), ``-o json`` at C speed
(:mod:`.jsonwrite`) and progress on a terminal's stderr (:mod:`.progress`). Kernel floor."""
