"""ONNX models, as tinygrad.nn.onnx: OnnxRunner(path)({"input": Tensor or numpy array}) -> {name: Tensor}."""
from tinygrad_cpp._tinygrad_cpp import _onnx

OnnxRunner = _onnx.OnnxRunner

__all__ = ["OnnxRunner"]
