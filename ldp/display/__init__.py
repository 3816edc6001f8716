"""What a person reads: plain-text tables (:mod:`ldp.display.tables`) and progress bars
(:mod:`ldp.display.progress`)."""
