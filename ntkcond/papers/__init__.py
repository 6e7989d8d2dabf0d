"""One subpackage per paper: its claims, experiments and figures, built on the ntkcond core.

``liu_hui``: Liu & Hui, "ReLU soothes the NTK condition number and accelerates optimization
for wide neural networks" (arXiv 2305.08813). ``zhang_saxe_latham``: Zhang, Saxe & Latham,
"When are bias-free ReLU networks effectively linear networks?" (arXiv 2406.12615).
The papers never import each other; ``import ntkcond`` loads neither.
"""
