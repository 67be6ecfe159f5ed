"""gpuops: DirectML's element-wise operators on any GPU through WebGPU, bit-exact against NumPy."""

from .adapter_choice import Adapter, adapters
from .api import default_device, is_infinity, is_nan, modulus_floor, modulus_truncate, sign
from . import backends
from .arrays import DeviceArray, asarray
from .device import Batch, Binding, BindingTable, CompiledOperator, Device
from .plan import DispatchPolicy
from .enums import DataType, FeatureLevel, IsInfinityMode, TensorFlags
from .errors import CastingError, DeviceError, FrozenDescriptionError, GpuOpsError, ValidationError
from .operators import IsInfinityDesc, IsNanDesc, ModulusFloorDesc, ModulusTruncateDesc, SignDesc
from .tensor import TensorDesc
from .validation import validate

__version__ = "0.1.0"

__all__ = [
    "Adapter", "adapters",
    "Batch", "Binding", "BindingTable", "CastingError", "CompiledOperator", "backends", "DataType", "Device",
    "DeviceArray",
    "DeviceError", "asarray",
    "DispatchPolicy",
    "FeatureLevel", "FrozenDescriptionError", "GpuOpsError",
    "IsInfinityDesc", "IsInfinityMode", "IsNanDesc", "ModulusFloorDesc", "ModulusTruncateDesc", "SignDesc",
    "TensorDesc", "TensorFlags", "ValidationError", "default_device", "is_infinity", "is_nan", "modulus_floor",
    "modulus_truncate", "sign", "validate",
]
