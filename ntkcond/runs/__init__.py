"""Run directories and the sweeps the scripts run.

``rundir``: one run-directory type (config, append-only records, resume, overwrite, locking);
``tables``: text tables and CSV; ``depth``: κ and angles against depth (Liu & Hui, Fig. 2–3);
``train_vs_depth``: finite nets trained by gradient descent, steps against the NTK's prediction;
``cli``: the flags every script shares. Not loaded by ``import ntkcond``.
"""
