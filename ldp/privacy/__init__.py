"""Privacy: costs and their composition (:mod:`ldp.privacy.accountant`), the client's budget ledger
(:mod:`ldp.privacy.ledger`, stored by :mod:`ldp.privacy.ledger_store`) and the exact audit of an encoder
(:mod:`ldp.privacy.audit`). Standard library only: the client imports it."""
