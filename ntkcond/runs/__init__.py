"""Run directories and the sweeps the scripts run.

``rundir``: one run-directory type (config, append-only records, resume, overwrite, locking);
``tables``: text tables and CSV; ``depth``: κ and angles against depth (Liu & Hui, Fig. 2–3);
``train_vs_depth``: finite nets trained by gradient descent, steps against the NTK's prediction
(the sweep, its table and figure), with ``gradient_descent`` (``train_to_loss``: the training)
and ``train_records`` (targets, κ_target, one record per net);
``cli``: the flags every script shares. Not loaded by ``import ntkcond``.
"""
