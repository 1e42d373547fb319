# Reference safetensors files from the Python implementation, and the check of files our safe_save wrote.
#   gen OUTDIR: writes ref_torch.safetensors, ref_numpy.safetensors and ref_expected.json
#   check TORCH_FILE NUMPY_FILE EXPECTED_JSON: loads our files with safetensors and compares every value
#   judge FILE...: prints "accept" or "reject" per file, as the reference's NumPy loader decides
import json
import math
import sys

import numpy as np
import torch
from safetensors import safe_open
from safetensors.numpy import load_file as np_load, save_file as np_save
from safetensors.torch import load_file as torch_load, save_file as torch_save

INF, NAN = float("inf"), float("nan")
METADATA = {"format": "pt", "source": "reference"}

# name -> (safetensors dtype, torch dtype, shape, values); torch 1.13 has no uint16/32/64, numpy writes those
TORCH = {
    "f64": ("F64", torch.float64, [2, 5], [0.0, -0.0, 1.5, -2.25, 1e-300, 1.7976931348623157e308, INF, -INF, NAN,
                                          3.141592653589793]),
    "f32": ("F32", torch.float32, [2, 3, 2], [1.0, -0.0, 0.1, 1e-40, 3.4028234663852886e38, -INF, NAN, 2.5, -7.75,
                                             1e-8, 123456.0, -1.0]),
    "f16": ("F16", torch.float16, [3, 3], [0.0, 1.0, -2.0, 65504.0, 5.960464477539063e-08, 1.0 / 3.0, INF, -INF,
                                          NAN]),
    "bf16": ("BF16", torch.bfloat16, [2, 4], [1.0, -1.5, 3.3895313892515355e38, 0.0078125, 1e-39, INF, NAN, 0.1]),
    "i64": ("I64", torch.int64, [5], [-2**63, 2**63 - 1, 0, -1, 123456789012345]),
    "i32": ("I32", torch.int32, [2, 2], [-2**31, 2**31 - 1, 0, -77]),
    "i16": ("I16", torch.int16, [4], [-32768, 32767, 0, -300]),
    "i8": ("I8", torch.int8, [4, 1], [-128, 127, 0, -5]),
    "u8": ("U8", torch.uint8, [2, 2], [0, 255, 128, 7]),
    "bool": ("BOOL", torch.bool, [2, 3], [True, False, False, True, True, False]),
    "scalar": ("F32", torch.float32, [], [42.5]),
    "empty": ("F32", torch.float32, [0, 3], []),
}
NUMPY = {
    "u16": ("U16", np.uint16, [3], [0, 65535, 1234]),
    "u32": ("U32", np.uint32, [3], [0, 4294967295, 7]),
    "u64": ("U64", np.uint64, [1, 3], [0, 18446744073709551615, 2**63]),
    "i64n": ("I64", np.int64, [2], [-9, 2**62]),
}


def encode(v):  # JSON has no inf/nan
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def same(got, want):
    if isinstance(want, float):
        if math.isnan(want):
            return math.isnan(got)
        return got == want and math.copysign(1, got) == math.copysign(1, want)
    return got == want


def gen(outdir):
    tensors = {k: torch.tensor(v, dtype=dt).reshape(shape) for k, (_, dt, shape, v) in TORCH.items()}
    arrays = {k: np.array(v, dtype=dt).reshape(shape) for k, (_, dt, shape, v) in NUMPY.items()}
    torch_save(tensors, f"{outdir}/ref_torch.safetensors", metadata=METADATA)
    np_save(arrays, f"{outdir}/ref_numpy.safetensors", metadata=METADATA)
    expected = {"torch": {}, "numpy": {}}
    for k, (name, dt, shape, _) in TORCH.items():  # the values as stored (rounded to the dtype)
        stored = tensors[k].double() if dt.is_floating_point else tensors[k]
        expected["torch"][k] = {"dtype": name, "shape": shape, "values": [encode(x) for x in stored.flatten().tolist()]}
    for k, (name, dt, shape, _) in NUMPY.items():
        expected["numpy"][k] = {"dtype": name, "shape": shape, "values": [int(x) for x in arrays[k].flatten()]}
    with open(f"{outdir}/ref_expected.json", "w") as f:
        json.dump(expected, f)


def check_file(path, loaded, expected, want_metadata):
    errors = []
    if sorted(loaded) != sorted(expected):
        errors.append(f"{path}: names {sorted(loaded)} != {sorted(expected)}")
    for k, e in expected.items():
        if k not in loaded:
            continue
        t = loaded[k]
        dtype = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64",
                 "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "U16": "uint16", "U32": "uint32",
                 "U64": "uint64", "BOOL": "bool"}[e["dtype"]]
        if str(t.dtype).replace("torch.", "") != dtype:
            errors.append(f"{k}: dtype {t.dtype} != {dtype}")
        if list(t.shape) != e["shape"]:
            errors.append(f"{k}: shape {list(t.shape)} != {e['shape']}")
        if isinstance(t, torch.Tensor):
            got = (t.double() if t.is_floating_point() else t).flatten().tolist()
        else:
            got = [x.item() for x in t.flatten()]
        want = [float(x) if isinstance(x, str) else x for x in e["values"]]
        if len(got) != len(want) or not all(same(g, w) for g, w in zip(got, want)):
            errors.append(f"{k}: values {got} != {want}")
    with safe_open(path, framework="np" if not isinstance(next(iter(loaded.values())), torch.Tensor) else "pt") as f:
        if f.metadata() != want_metadata:
            errors.append(f"{path}: metadata {f.metadata()} != {want_metadata}")
    return errors


def check(torch_file, numpy_file, expected_json):
    with open(expected_json) as f:
        expected = json.load(f)
    want_metadata = {"format": "pt", "source": "tinygrad.cpp"}
    errors = check_file(torch_file, torch_load(torch_file), expected["torch"], want_metadata)
    errors += check_file(numpy_file, np_load(numpy_file), expected["numpy"], want_metadata)
    for e in errors:
        print(e)
    print("ok" if not errors else f"{len(errors)} mismatches")
    return 1 if errors else 0


def judge(paths):
    for path in paths:
        try:
            np_load(path)
            print("accept")
        except Exception:  # SafetensorError from the parser, ValueError from NumPy for impossible shapes
            print("reject")
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2])
    elif sys.argv[1] == "judge":
        sys.exit(judge(sys.argv[2:]))
    else:
        sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4]))
