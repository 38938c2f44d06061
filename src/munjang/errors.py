"""Exceptions munjang raises, so callers can catch a specific failure instead of a generic one."""

from __future__ import annotations


class MunjangError(Exception):
    """Base class of every error munjang raises on purpose."""


class ModelLoadError(MunjangError):
    """A model folder or hub id could not be loaded: missing, incomplete, corrupt or unsupported."""


class ModelNotFoundError(ModelLoadError, FileNotFoundError):
    """The model folder does not exist, or the hub id could not be resolved (offline, unknown)."""


class CorruptModelError(ModelLoadError):
    """A model file exists but cannot be read (bad JSON, truncated or corrupt safetensors)."""


class DataFormatError(MunjangError, ValueError):
    """A data file is malformed; the message names the file and line."""


class InputTooLongError(MunjangError, ValueError):
    """A text is longer than the model's limit and truncation was turned off."""


class MissingExtraError(MunjangError, ImportError):
    """An optional dependency is not installed; the message names the pip extra that brings it."""


class ImageError(MunjangError, ValueError):
    """An image could not be read: missing, not an image, too large, or its download failed."""
