"""tandem's errors. The library's exceptions arrive as these classes, with the library's message.

Bad values are also ValueErrors (UsageError: a parameter that cannot be used as given; InputError:
data that is malformed), so ``except ValueError`` catches them as it would for numpy.
"""


class Error(Exception):
    """Any error raised by tandem's library."""


class UsageError(Error, ValueError):
    """A parameter or option that cannot be used as given (unknown device, k larger than the data...)."""


class InputError(Error, ValueError):
    """Malformed input data (a truncated file, an unsorted list, an overflowing integer sum...)."""


class NoDeviceError(Error, RuntimeError):
    """A GPU was required (device="gpu") but none is usable, or this build has no CUDA support."""


class CudaError(Error, RuntimeError):
    """A CUDA call or kernel launch failed."""


class OutOfMemoryError(CudaError, MemoryError):
    """GPU (or pinned host) memory could not be allocated."""


__all__ = ["Error", "UsageError", "InputError", "NoDeviceError", "CudaError", "OutOfMemoryError"]
