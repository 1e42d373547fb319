"""Reference checkpoints for test_checkpoints: .pt files written by torch.save and .gguf files written by the
gguf package (quantized with gguf.quants, or random blocks for Q6_K), each with the values a reader must give
in a safetensors file written by the safetensors package. Usage: checkpoint_ref.py OUTDIR [STAMP]"""
import collections
import os
import sys

import numpy as np
import torch
from safetensors.numpy import save_file as save_np
from safetensors.torch import save_file as save_torch

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
rng = np.random.default_rng(0)


def expect(name, tensors):
    save_torch({k: v.detach().contiguous().clone() for k, v in tensors.items()}, os.path.join(out, name))


# dtypes, each in its own storage
dt = {
    "f32": torch.randn(3, 5),
    "f16": torch.randn(4, 2).half(),
    "bf16": torch.randn(7).bfloat16(),
    "i64": torch.randint(-2**40, 2**40, (2, 3), dtype=torch.int64),
    "i8": torch.randint(-128, 127, (9,), dtype=torch.int8),
    "bool": torch.rand(2, 2, 2) > 0.5,
    "u8": torch.randint(0, 255, (6,), dtype=torch.uint8),
    "f64": torch.randn(2, dtype=torch.float64),
    "scalar": torch.tensor(2.5),
}
torch.save(dt, os.path.join(out, "dtypes.pt"))
expect("dtypes.expect.safetensors", dt)

# views: transposed, sliced with an offset, expanded, all sharing storages, in nested containers
base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
views = {"model": collections.OrderedDict(base=base, t=base.t(), part=base[1:3, 2:5], col=base[:, 1]),
         "list": [base[2], (base.t()[1:], 7, "x", None)], "step": 3, "lr": 0.5, "flag": True,
         "expand": torch.tensor([1.5, -2.0]).expand(3, 2)}
torch.save(views, os.path.join(out, "views.pt"))
expect("views.expect.safetensors", {"model.base": base, "model.t": base.t(), "model.part": base[1:3, 2:5],
                                    "model.col": base[:, 1], "list.0": base[2], "list.1.0": base.t()[1:],
                                    "expand": views["expand"]})

# a model's state_dict (OrderedDict with _metadata, parameters and buffers)
model = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3), torch.nn.Flatten(),
                            torch.nn.Linear(12, 4))
sd = model.state_dict()
torch.save(sd, os.path.join(out, "model.pt"))
expect("model.expect.safetensors", dict(sd))
# the same, with nn.Parameter objects (torch._utils._rebuild_parameter)
torch.save({"w": torch.nn.Parameter(torch.randn(2, 2))}, os.path.join(out, "param.pt"))
expect("param.expect.safetensors", torch.load(os.path.join(out, "param.pt")))


class Evil:
    def __reduce__(self):
        return (os.system, ("true",))


torch.save({"x": Evil()}, os.path.join(out, "evil.pt"))

# gguf
import gguf  # noqa: E402
from gguf import GGMLQuantizationType as Q  # noqa: E402


def write_gguf(path, alignment=None):  # the same values each call
    rng = np.random.default_rng(1)
    torch.manual_seed(1)
    w = gguf.GGUFWriter(path, "test")
    if alignment:
        w.add_custom_alignment(alignment)
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -100)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -30000)
    w.add_uint32("t.u32", 4000000000)
    w.add_int32("t.i32", -2000000000)
    w.add_float32("t.f32", 0.25)
    w.add_uint64("t.u64", 2**63 + 5)
    w.add_int64("t.i64", -2**62)
    w.add_float64("t.f64", 1e-300)
    w.add_bool("t.bool", True)
    w.add_string("t.str", "héllo")
    w.add_array("t.arr_i", [1, 2, 3])
    w.add_array("t.arr_s", ["a", "bc", ""])
    exp = {}
    a = rng.standard_normal((3, 4)).astype(np.float32)
    w.add_tensor("f32", a)
    exp["f32"] = a
    h = rng.standard_normal((2, 8)).astype(np.float16)
    w.add_tensor("f16", h)
    exp["f16"] = h
    b = torch.randn(5, 4).bfloat16()
    w.add_tensor("bf16", b.view(torch.int16).numpy().view(np.uint8).reshape(5, 8), raw_dtype=Q.BF16)
    for qt in (Q.Q4_0, Q.Q8_0):
        x = rng.standard_normal((3, 64)).astype(np.float32)
        q = gguf.quants.quantize(x, qt)
        w.add_tensor(qt.name.lower(), q, raw_dtype=qt)
        exp[qt.name.lower()] = gguf.quants.dequantize(q, qt).astype(np.float32)
    blocks = rng.integers(0, 256, (2, 2 * 210), dtype=np.uint8)  # random Q6_K blocks with a sane scale d
    for r in range(2):
        for k in range(2):
            blocks[r, k * 210 + 208:k * 210 + 210] = np.array([rng.uniform(0.001, 0.1)], np.float16).view(np.uint8)
    w.add_tensor("q6_k", blocks, raw_dtype=Q.Q6_K)
    exp["q6_k"] = gguf.quants.dequantize(blocks, Q.Q6_K).astype(np.float32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return exp, b


exp, b = write_gguf(os.path.join(out, "model.gguf"))
write_gguf(os.path.join(out, "aligned.gguf"), alignment=64)
save_np(exp, os.path.join(out, "gguf.expect.safetensors"))
save_torch({"bf16": b}, os.path.join(out, "gguf_bf16.expect.safetensors"))
with open(os.path.join(out, "model.gguf"), "rb") as f:
    data = bytearray(f.read())
data[4:8] = (2).to_bytes(4, "little")
with open(os.path.join(out, "v2.gguf"), "wb") as f:
    f.write(data)

# the same archive with every entry deflated
import zipfile  # noqa: E402

with zipfile.ZipFile(os.path.join(out, "dtypes.pt")) as src, \
        zipfile.ZipFile(os.path.join(out, "deflated.pt"), "w", zipfile.ZIP_DEFLATED) as dst:
    for info in src.infolist():
        dst.writestr(info.filename, src.read(info.filename))

if len(sys.argv) > 2:
    with open(sys.argv[2], "w") as f:
        f.write("done\n")

# a Linear(3, 2) for loading into a model
lin = torch.nn.Linear(3, 2)
torch.save(lin.state_dict(), os.path.join(out, "linear.pt"))
