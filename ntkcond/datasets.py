"""Data sets as float64 (n, d) arrays, with the preprocessing that was applied recorded.

Names:
  ``mnist``, ``fashion_mnist``, ``cifar10``, ``svhn_cropped``
                tensorflow-datasets (the ``tfds`` extra), read from the TFDS data dir (or
                downloaded when there is a network). Without data and network,
                ``DataUnavailableError`` says where it looked and the two ways out.
  ``digits``    scikit-learn's bundled 8×8 handwritten digits (1797 images, d = 64), real
                data with no download: the offline default. Pixels 0…16 are scaled to [0, 1],
                then normalised with mean 0.5, std 0.5, as for MNIST.
  ``gaussian``  synthetic N(0, I_d) inputs (``n``, ``dim``), as in the papers' synthetic runs.
  a path        an ``.npz`` file with arrays ``x`` (images or vectors) and ``y``. Integer
                pixels are scaled to [0, 1] by 1/255; ``mean``/``std`` are optional.

The per-channel normalisation is (x/255 − mean)/std, as in the papers' code (Liu & Hui).
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import os

import numpy as np

__all__ = ["Dataset", "DataUnavailableError", "TFDS_NAMES", "load", "batches"]

#: Papers' preprocessing per tensorflow-datasets name: pixels/255, then (x − mean)/std per channel.
TFDS_NAMES = {
    "mnist": (0.5, 0.5),
    "fashion_mnist": (0.5, 0.5),
    "svhn_cropped": ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
    "cifar10": (
        tuple(v / 255 for v in (125.3, 123.0, 113.9)),
        tuple(v / 255 for v in (63.0, 62.1, 66.7)),
    ),
}
_DOWNLOAD_HOST = "storage.googleapis.com"


class DataUnavailableError(ValueError):
    """A named data set is neither on disk nor downloadable. The message is one line."""


@dataclasses.dataclass(frozen=True)
class Dataset:
    """A loaded data set.

    Attributes:
      x: (n, d) float64 inputs, preprocessed and flattened.
      y: (n,) labels.
      name: data-set name or path.
      split: split name.
      image_shape: shape of one example before flattening, e.g. (28, 28) or (32, 32, 3).
      preprocessing: what was applied (JSON-serialisable), written into every output file.
    """

    x: np.ndarray
    y: np.ndarray
    name: str
    split: str
    image_shape: tuple
    preprocessing: dict


def _normalise(x: np.ndarray, scale: float, mean, std, where: str):
    """(x·scale − mean)/std per channel (last axis of images with channels, else scalar)."""
    x = x.astype(np.float64) * scale
    mean = np.atleast_1d(np.asarray(mean, dtype=np.float64))
    std = np.atleast_1d(np.asarray(std, dtype=np.float64))
    if np.any(std <= 0):
        raise ValueError(f"{where}: expected std > 0, got {std.tolist()}")
    channels = x.shape[-1] if x.ndim == 4 else 1
    for name, v in (("mean", mean), ("std", std)):
        if v.size not in (1, channels):
            raise ValueError(
                f"{where}: expected {name} with 1 or {channels} values, got {v.size}"
            )
    return (x - mean) / std, mean.tolist(), std.tolist()


def load(
    name: str,
    split: str = "train",
    *,
    data_dir: str | None = None,
    n: int = 512,
    dim: int = 784,
    seed: int = 0,
    mean=None,
    std=None,
    preset: str | None = None,
    normalize: str = "default",
) -> Dataset:
    """Load a data set as float64 (n, d) arrays.

    Args:
      name: ``mnist``, ``fashion_mnist``, ``cifar10``, ``svhn_cropped`` (tensorflow-datasets),
        ``digits``, ``gaussian`` or a path to an ``.npz`` file.
      split: split name (``digits``, ``gaussian`` and ``.npz`` files have one split; recorded).
      data_dir: TFDS data dir (default ``$TFDS_DATA_DIR`` or ``~/tensorflow_datasets``).
      n, dim, seed: size and seed of the ``gaussian`` set.
      mean, std: per-channel normalisation after scaling to [0, 1] (``.npz``; the named sets
        use the papers' values).
      preset: for an ``.npz`` file, use the papers' mean/std of a named set (``mnist``,
        ``fashion_mnist``, ``cifar10``, ``svhn_cropped``); overridden by ``mean``/``std``.
      normalize: ``default`` (as above), ``unit`` (additionally project every input onto the
        unit sphere) or ``none`` (raw values as float64).

    Raises:
      DataUnavailableError: a TFDS set neither on disk nor downloadable (a ValueError).
      ValueError: unknown name, malformed file, NaN values, bad sizes.
    """
    where = "datasets.load"
    if preset is not None:
        if preset not in TFDS_NAMES:
            raise ValueError(f"{where}: expected preset in {sorted(TFDS_NAMES)}, got {preset!r}")
        mean = TFDS_NAMES[preset][0] if mean is None else mean
        std = TFDS_NAMES[preset][1] if std is None else std
    if normalize not in ("default", "unit", "none"):
        raise ValueError(f"{where}: expected normalize 'default', 'unit' or 'none', got {normalize!r}")
    if name in TFDS_NAMES:
        images, y, source = _load_tfds(name, split, data_dir, where)
        scale = 1.0 / 255.0
        default_mean, default_std = TFDS_NAMES[name]
    elif name == "digits":
        from sklearn.datasets import load_digits

        bunch = load_digits()
        images, y = bunch.images, bunch.target
        scale, default_mean, default_std = 1.0 / 16.0, 0.5, 0.5
        source = "sklearn.datasets.load_digits"
    elif name == "gaussian":
        if n < 1 or dim < 1:
            raise ValueError(f"{where}: expected gaussian n >= 1 and dim >= 1, got n={n}, dim={dim}")
        x = np.random.default_rng(seed).standard_normal((n, dim))
        prep = {"source": "N(0, I)", "n": n, "dim": dim, "seed": seed, "normalize": normalize}
        if normalize == "unit":
            x = x / np.linalg.norm(x, axis=1, keepdims=True)
        return Dataset(x, np.zeros(n, dtype=np.int64), "gaussian", split, (dim,), prep)
    elif name.endswith(".npz") or os.path.exists(name):
        images, y = _read_npz(name, where)
        scale = 1.0 / 255.0 if np.issubdtype(images.dtype, np.integer) else 1.0
        default_mean, default_std = 0.0, 1.0
        source = os.path.abspath(name)
    else:
        raise ValueError(
            f"{where}: unknown data set {name!r}; expected one of {sorted(TFDS_NAMES)}, "
            "'digits', 'gaussian' or a path to an .npz file"
        )
    if normalize == "none":
        x = images.astype(np.float64)
        mean_used = std_used = None
        scale = 1.0
    else:
        x, mean_used, std_used = _normalise(
            images,
            scale,
            default_mean if mean is None else mean,
            default_std if std is None else std,
            where,
        )
    x = x.reshape(len(x), -1)
    if normalize == "unit":
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        if np.any(norms == 0):
            raise ValueError(f"{where}: cannot project a zero input onto the unit sphere ({name})")
        x = x / norms
    prep = {
        "source": source,
        "pixel_scale": scale,
        "mean": mean_used,
        "std": std_used,
        "normalize": normalize,
    }
    return Dataset(x, np.asarray(y), name, split, tuple(images.shape[1:]), prep)


def _default_tfds_dir() -> str:
    return os.environ.get("TFDS_DATA_DIR") or os.path.join(os.path.expanduser("~"), "tensorflow_datasets")


def _download_reachable(timeout: float = 3.0) -> bool:
    """Whether the TFDS download host answers; avoids tfds' minutes of retries offline."""
    import socket

    try:
        with socket.create_connection((_DOWNLOAD_HOST, 443), timeout=timeout):
            return True
    except OSError:
        return False


def _load_tfds(name: str, split: str, data_dir, where: str):
    """Images (n, H, W, C) uint8 and labels of a tensorflow-datasets split, as numpy."""
    searched = data_dir or _default_tfds_dir()
    ways_out = (
        f"point --data-dir at a prepared TFDS directory, or pass --dataset path/to/file.npz "
        f"(arrays x and y)"
    )
    try:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's C++ start-up chatter
        import tensorflow_datasets as tfds
    except ImportError:
        raise DataUnavailableError(
            f"{where}: {name} needs tensorflow-datasets (pip install 'ntkcond[tfds]'); or {ways_out}"
        ) from None
    kwargs = dict(split=split, data_dir=data_dir, as_supervised=True)
    with _quiet_absl():
        return _load_tfds_quietly(tfds, name, split, searched, ways_out, where, kwargs)


@contextlib.contextmanager
def _quiet_absl():
    """Silence absl's warnings (e.g. 'Variant folder … has no dataset_info.json') for a while."""
    logger = logging.getLogger("absl")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _load_tfds_quietly(tfds, name, split, searched, ways_out, where, kwargs):
    try:
        ds = tfds.load(name, download=False, **kwargs)
    except (AssertionError, OSError, tfds.core.registered.DatasetNotFoundError):
        if not _download_reachable():
            raise DataUnavailableError(
                f"{where}: {name} ({split}) is not in the TFDS data dir {searched} and cannot be "
                f"downloaded (no network); {ways_out}"
            ) from None
        try:
            ds = tfds.load(name, download=True, **kwargs)
        except Exception as err:  # tfds raises many kinds; the user needs one line
            cause = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
            raise DataUnavailableError(
                f"{where}: {name} ({split}) is not in the TFDS data dir {searched} and its "
                f"download failed ({cause}); {ways_out}"
            ) from None
    except ValueError as err:  # e.g. an unknown split
        raise ValueError(f"{where}: {name}: {str(err).splitlines()[0]}") from None
    xs, ys = zip(*tfds.as_numpy(ds.batch(4096)))
    return np.concatenate(xs), np.concatenate(ys), f"tfds:{name}:{split}:{searched}"


def _read_npz(path: str, where: str):
    try:
        f = np.load(path, allow_pickle=False)
    except (OSError, EOFError, ValueError) as err:  # missing, truncated or not a zip file
        raise ValueError(f"{where}: cannot read {path} as an .npz file ({err})") from None
    if not hasattr(f, "files"):
        raise ValueError(f"{where}: expected an .npz archive with arrays 'x' and 'y', got a single array in {path}")
    with f:
        if "x" not in f.files or "y" not in f.files:
            raise ValueError(f"{where}: expected arrays 'x' and 'y' in {path}, got {sorted(f.files)}")
        try:
            x, y = f["x"], f["y"]
        except (OSError, EOFError, ValueError) as err:
            raise ValueError(f"{where}: cannot read arrays from {path} ({err})") from None
    if x.ndim < 2 or len(x) == 0:
        raise ValueError(f"{where}: expected x of shape (n, ...) with n >= 1 in {path}, got {x.shape}")
    if len(y) != len(x):
        raise ValueError(f"{where}: expected len(y) == len(x) in {path}, got {len(y)} and {len(x)}")
    if not (np.issubdtype(x.dtype, np.integer) or np.issubdtype(x.dtype, np.floating)):
        raise ValueError(f"{where}: expected numeric x in {path}, got dtype {x.dtype}")
    if np.issubdtype(x.dtype, np.floating) and not np.all(np.isfinite(x)):
        raise ValueError(f"{where}: expected finite pixels in {path}, got NaN or Inf")
    return x, y


def batches(
    dataset: Dataset,
    batch: int,
    *,
    seed: int = 0,
    shuffle: bool = True,
    max_batches: int | None = None,
    drop_last: bool = False,
):
    """Split a data set into batches of indices.

    Args:
      dataset: a ``Dataset``.
      batch: batch size, 1 ≤ batch ≤ n.
      seed: shuffling seed; ``shuffle=False`` keeps the file order.
      max_batches: at most this many batches.
      drop_last: drop a final batch smaller than ``batch``.

    Returns:
      list of index arrays.
    """
    n = len(dataset.x)
    if batch < 1 or batch > n:
        raise ValueError(
            f"batches: expected 1 <= batch <= n = {n} ({dataset.name}), got batch = {batch}"
        )
    order = np.random.default_rng(seed).permutation(n) if shuffle else np.arange(n)
    out = [order[i : i + batch] for i in range(0, n, batch)]
    if drop_last and len(out[-1]) < batch:
        out = out[:-1]
    if max_batches is not None:
        out = out[:max_batches]
    return out
