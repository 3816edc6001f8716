"""The two-aggregator mode (issue 71): Prio3 secure aggregation between a leader and a helper that do not collude,
with central noise on each aggregate share and, optionally, local randomization inside.

Devices split each measurement into two secret shares with a validity proof (VDAF draft 18's Prio3, the ``prio``
crate: the native client, or :func:`ldp.prio.seal_report` in simulations) and upload a DAP-09 report, each share
sealed to its aggregator's HPKE key, to the leader. The leader stores it, batches reports into aggregation jobs by
window and prepares each with the helper (one round); both keep the valid ones' aggregate shares in their own
stores; the collector (``ldp collect``) gets a window's result only once, only from at least the task's minimum
batch size, and only noised by each aggregator. The modules:

* :mod:`~ldp.aggregators.task` — the public task (the metric's Prio3 type, window, threshold, noise, target);
* :mod:`~ldp.aggregators.messages` — the leader–helper messages and the refusal codes;
* :mod:`~ldp.aggregators.records` — what each aggregator stores, written once (exactly-once by construction);
* :mod:`~ldp.aggregators.prepare` — the HPKE ``info`` and associated data of an aggregate share;
  :mod:`~ldp.aggregators.release` — a window's noised release and the central ε over releases;
* :mod:`~ldp.aggregators.aggregator` — what both roles share: each task's state as one object
  (:mod:`~ldp.aggregators.state`); :mod:`~ldp.aggregators.crashpoints` — where the crash tests kill them;
* :mod:`~ldp.aggregators.helper`, :mod:`~ldp.aggregators.leader` — the two roles;
  :mod:`~ldp.aggregators.routes` — their routes (on the services' layer, :mod:`ldp.web`);
  :mod:`~ldp.aggregators.http` — their clients; :mod:`~ldp.aggregators.config` — their configs;
  :mod:`~ldp.aggregators.service` — ``ldp serve --role``;
* :mod:`~ldp.aggregators.collect` — the collector: open, add, debias, report both guarantees.

See docs/trust-models.md for what each party learns and docs/two-aggregators.md for running them.
"""
