"""Claim 22 (issue 31): Liu & Hui's two statements for convolutional nets with a flatten
read-out, on real images.

Liu & Hui (arXiv 2305.08813) prove for bias-free fully-connected nets that (i) a linear net's
NTK is (L + 1)·XXᵀ/d, so its condition number does not change with depth, and (ii) ReLU
makes the NTK better conditioned than the linear net's. For the CNN of ``claim_kit.cnn_ntk``
(k × k convolutions, infinitely many channels, a flatten read-out, NTK parameterisation):

* 22a. With circular padding the linear CNN's NTK is exactly the linear fully-connected net's:
  a convolution averages each pixel-pair covariance over the k² common shifts of the two
  pixels, the flatten read-out keeps the mean of the per-pixel variances (the spatial
  diagonal), and with circular padding every shift of the diagonal is again the diagonal, so
  the mean is kept layer by layer: Σ_L = XXᵀ/(HWC), Θ_L = (L + 1)·XXᵀ/(HWC). Statement (i)
  carries over.
* 22b. With zero (SAME) padding it does not: the border pixels' shifts fall off the image, the
  mean of the diagonal is reweighted towards the centre at each layer, and the linear CNN's
  κ_eff changes with depth. Measured (n = 32, fast): it falls, 109.3 → 99.3 from L = 0 to 10
  on CIFAR-10, 1329 → 937 on MNIST, 7090 → 3975 on the digits: the border alone soothes.
* 22c. ReLU soothes more: the ReLU CNN's κ_eff (SAME padding) is below the linear CNN's at
  every depth 1–10 on every real set. Measured (n = 32): CIFAR-10 65.3 against 107.4 at L = 1
  and 48.9 against 99.3 at L = 10; MNIST 116 against 937, the digits 36 against 3975 at L = 10.

The checks compute every kernel with ``Formulas.cnn_ntk`` (``ntkcond.stax``) and compare 22a
against the Gram matrix XXᵀ/(HWC) written out here; a planted error fails each
(``tests/test_conv_claims.py``): a 1% error in the convolution's weight variance (22a), a
kernel that pads circularly whatever it is asked (22b), a kernel that ignores the activation
(22c).
"""
from __future__ import annotations

import numpy as np

from ...spectrum import conditioning
from .claim_kit import BELOW_ONE, Claim, Formulas, at_least, at_most, pyplot, real_images, save_figure

__all__ = ["check_conv_nets", "CONV_DEPTHS", "CIRCULAR_TOL", "SAME_DRIFT"]

#: The depths of every claim-22 kernel.
CONV_DEPTHS = tuple(range(11))
#: 22a's tolerance on max |Θ_L − (L + 1)·G| / max diag Θ_L: the flatten route sums H·W·k²
#: products per entry and layer (relative rounding ~1e-15 per layer, measured ≤ 4e-16 on the
#: digits); a 1% error in a weight variance moves Θ_10 by ~5%.
CIRCULAR_TOL = 1e-12
#: 22b's threshold on the largest |κ_L/κ_0 − 1| of the linear CNN with SAME padding: far
#: above rounding (which gives ~1e-13 for the circular net), far below the 14% measured.
SAME_DRIFT = 1e-3


def _kappa(K) -> float:
    return float(conditioning(K).kappa_eff)


def check_conv_nets(formulas=Formulas(), fast=True, outdir=None, data_dir=None) -> list:
    """Claims 22a, 22b, 22c (module docstring) on the first n = 32 (fast) or 64 images of each
    real set (``claim_kit.real_images``: MNIST and CIFAR-10 when ``data_dir`` has them, the
    digits always) at depths 0–10."""
    n = 32 if fast else 64
    sets = real_images(n, data_dir)
    errors, drift, ratio, kappas = {}, {}, {}, {}
    for name, images in sets.items():
        x = images.reshape(len(images), -1)
        gram = x @ x.T / x.shape[1]
        errs, k_circ, k_lin, k_relu = [], [], [], []
        for L in CONV_DEPTHS:
            circ = formulas.cnn_ntk(images, L, "linear", "CIRCULAR")
            errs.append(float(np.max(np.abs(circ - (L + 1) * gram)) / np.max(np.diag(circ))))
            k_circ.append(_kappa(circ))
            k_lin.append(_kappa(formulas.cnn_ntk(images, L, "linear", "SAME")))
            k_relu.append(_kappa(formulas.cnn_ntk(images, L, "relu", "SAME")))
        errors[name] = max(errs)
        drift[name] = float(max(abs(k / k_lin[0] - 1.0) for k in k_lin))
        ratio[name] = float(max(r / l for r, l in zip(k_relu[1:], k_lin[1:])))
        kappas[name] = {"linear circular": k_circ, "linear SAME": k_lin, "relu SAME": k_relu}
    figs = _figure(kappas, n, outdir)
    shapes = {name: list(images.shape[1:]) for name, images in sets.items()}
    where = (f"the first {n} images of " + ", ".join(f"{k} ({'×'.join(map(str, v))})"
                                                     for k, v in shapes.items())
             + f", depths {CONV_DEPTHS[0]}–{CONV_DEPTHS[-1]}, 3 × 3 convolutions, flatten read-out")
    paper = ("Liu & Hui, arXiv 2305.08813 (linear nets' κ is depth-independent; ReLU improves "
             "it), asked of convolutional nets (issue 31)")
    details = {"n": n, "depths": list(CONV_DEPTHS), "image_shapes": shapes, "kappa_eff": kappas}
    worst, top_drift, top_ratio = max(errors.values()), min(drift.values()), max(ratio.values())
    return [
        Claim(id="22a", title="A linear CNN (circular padding, flatten) has the linear net's NTK at every depth",
              formula="Θ_L = (L + 1)·XXᵀ/(HWC): κ independent of depth, as for fully-connected linear nets",
              paper=paper,
              computed=(f"ntkcond.stax's NTK of the bias-free linear CNN on {where}, against "
                        "(L + 1)·XXᵀ/(HWC); max |Θ_L − (L+1)G| / max diag Θ_L: "
                        + ", ".join(f"{k} {v:.1e}" for k, v in errors.items())),
              criteria=(at_most("max over sets and depths of max|Θ_L − (L+1)·XXᵀ/(HWC)| / max diag Θ_L",
                                worst, CIRCULAR_TOL),),
              why=(f"the identity is exact; the kernel route rounds at ~1e-15 per layer, so "
                   f"{CIRCULAR_TOL:g} leaves a margin over 10 layers, and a 1% error in the "
                   "convolution's weight variance moves Θ_10 by ~5%"),
              details={**details, "max_error": errors}, figures=figs),
        Claim(id="22b", title="…but not with zero (SAME) padding: the linear CNN's κ changes with depth",
              formula="|κ_L/κ_0 − 1| > 0 for the linear CNN with SAME padding",
              paper=paper,
              computed=(f"κ_eff of the linear CNN with SAME padding on {where}; largest "
                        "|κ_L/κ_0 − 1|: " + ", ".join(f"{k} {v:.3g}" for k, v in drift.items())),
              criteria=(at_least("min over sets of max over depths of |κ_L/κ_0 − 1|",
                                 top_drift, SAME_DRIFT),),
              why=(f"the border reweights the mean of the spatial diagonal at each layer; the "
                   f"threshold {SAME_DRIFT:g} is far above rounding (the circular net's κ moves "
                   "by ~1e-13) and far below the drift measured; a kernel that pads circularly "
                   "fails it"),
              details={**details, "max_relative_drift": drift}, figures=figs),
        Claim(id="22c", title="ReLU soothes a CNN's NTK: κ_eff below the linear CNN's at every depth",
              formula="κ_eff(ReLU CNN) < κ_eff(linear CNN), L = 1…10, SAME padding, flatten",
              paper=paper,
              computed=(f"κ_eff of the ReLU (s_w = √2) and linear CNN with SAME padding on {where}; "
                        "largest κ_ReLU/κ_linear over depths 1–10: "
                        + ", ".join(f"{k} {v:.3g}" for k, v in ratio.items())),
              criteria=(at_most("max over sets and depths 1–10 of κ_eff(ReLU)/κ_eff(linear)",
                                top_ratio, BELOW_ONE),),
              why=("κ of two different kernels, apart by far more than rounding where the claim "
                   "holds; the same kernel twice (an activation ignored) gives 1 and fails"),
              details={**details, "max_ratio": ratio}, figures=figs),
    ]


def _figure(kappas, n, outdir) -> tuple:
    """κ_eff against depth: one panel per set, the three nets of claim 22."""
    if outdir is None:
        return ()
    plt = pyplot()
    fig, axes = plt.subplots(1, len(kappas), figsize=(3.6 * len(kappas), 3.4), squeeze=False)
    for ax, (name, curves) in zip(axes[0], kappas.items()):
        for label, values in curves.items():
            ax.plot(CONV_DEPTHS, values, "o-", ms=3, label=label)
        ax.set_yscale("log")
        ax.set(xlabel="depth L", ylabel="κ_eff of the NTK", title=f"{name}, n = {n}")
        ax.legend(fontsize=7)
    fig.suptitle("Claim 22: CNN with flatten read-out, bias-free, infinite width")
    fig.tight_layout()
    return save_figure(fig, outdir, "claim22_conv_nets.png")
