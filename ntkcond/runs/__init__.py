"""Run directories and the sweeps the scripts run.

``rundir``: one run-directory type (config, append-only records, resume, overwrite, locking);
``tables``: text tables and CSV; ``depth``: κ and angles against depth (Liu & Hui, Fig. 2–3);
``train_vs_depth``: finite nets trained by gradient descent, steps against the NTK's prediction
(the sweep, its table and figure), with ``gradient_descent`` (``train_to_loss``: the training)
and ``train_records`` (targets, κ_target, one record per net);
``cli``: the flags every command shares (each command's ``main`` lives beside its library
call); ``frames``: ``load``, a run directory's records as a pandas DataFrame (the ``pandas``
extra). Not loaded by ``import ntkcond``.
"""
from .frames import load as load

__all__ = ["load"]
