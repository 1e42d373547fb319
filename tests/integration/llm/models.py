"""Small gguf models with random weights for the llm tests and benchmark, written with the gguf package.

make(path, arch, wtype, vocab_file, ...) writes a llama-, qwen2-, qwen3- or gpt2-shaped model whose matrices
are stored as wtype (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K) and whose tokenizer metadata is copied from one of
llama.cpp's ggml-vocab-*.gguf files. Q8_0/Q4_0 go through gguf's own quantizer; gguf has none for the
K-quants, so their blocks are random bytes with scales chosen for weights of about the same spread.
"""
import functools

import numpy as np
import gguf

Q = gguf.GGMLQuantizationType


def _kquant_blocks(rng, rows, cols, qtype, sigma):
    nb = cols // 256
    if qtype == Q.Q4_K:  # d, dmin (f16), 12 bytes of 6-bit scales/mins, 128 bytes of nibbles
        b = rng.integers(0, 256, size=(rows, nb, 144), dtype=np.uint8)
        d = np.full((rows, nb), sigma / 200.0, dtype=np.float16)
        dmin = (d.astype(np.float32) * 7.5).astype(np.float16)
        b[:, :, 0:2] = d.view(np.uint8).reshape(rows, nb, 2)
        b[:, :, 2:4] = dmin.view(np.uint8).reshape(rows, nb, 2)
        # min = scale in every sub-block, so its weights d*sc*(q - 7.5) are centred on 0, as trained ones are
        sc = rng.integers(32, 64, size=(rows, nb, 8)).astype(np.uint8)
        packed = np.zeros((rows, nb, 12), dtype=np.uint8)
        packed[:, :, 0:4] = (sc[:, :, 0:4] & 63) | ((sc[:, :, 4:8] >> 4) << 6)
        packed[:, :, 4:8] = (sc[:, :, 0:4] & 63) | ((sc[:, :, 4:8] >> 4) << 6)
        packed[:, :, 8:12] = (sc[:, :, 4:8] & 15) | ((sc[:, :, 4:8] & 15) << 4)
        b[:, :, 4:16] = packed
    else:  # Q6_K: 128 bytes low nibbles, 64 of high bits, 16 int8 scales, d (f16)
        b = rng.integers(0, 256, size=(rows, nb, 210), dtype=np.uint8)
        b[:, :, 192:208] = rng.integers(-32, 33, size=(rows, nb, 16)).astype(np.int8).view(np.uint8)
        d = np.full((rows, nb), sigma / 330.0, dtype=np.float16)
        b[:, :, 208:210] = d.view(np.uint8).reshape(rows, nb, 2)
    return b.reshape(rows, nb * b.shape[-1])


def _add(w, name, data, qtype):
    if qtype in (Q.F32, Q.F16):
        w.add_tensor(name, data)
    else:
        w.add_tensor(name, data, raw_dtype=qtype)


def _matrix(rng, w, name, shape, wtype, sigma):
    """Adds a random matrix stored as wtype; returns (stored rows, qtype) for reuse."""
    qtype = Q[wtype]
    if qtype in (Q.Q4_K, Q.Q6_K):
        data = _kquant_blocks(rng, shape[0], shape[1], qtype, sigma)
    else:
        x = (rng.standard_normal(shape) * sigma).astype(np.float32)
        data = x if qtype == Q.F32 else x.astype(np.float16) if qtype == Q.F16 else gguf.quants.quantize(x, qtype)
    _add(w, name, data, qtype)
    return data, qtype


def copy_fields(w, r, keep):
    """Copies the metadata of reader r whose keys pass keep into writer w, with their value types."""
    for key, f in r.fields.items():
        if key.startswith("GGUF.") or not keep(key):
            continue
        vtype = f.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            w.add_key_value(key, f.contents(), vtype, sub_type=f.types[-1])
        else:
            w.add_key_value(key, f.contents(), vtype)


@functools.lru_cache(maxsize=None)
def _vocab(vocab_file):
    """A vocabulary file, parsed once a process (gguf's reader takes seconds on a 150k-token one)."""
    return gguf.GGUFReader(vocab_file)


def copy_tokenizer(w, vocab_file):
    r = _vocab(vocab_file)
    copy_fields(w, r, lambda key: key.startswith("tokenizer."))
    return len(r.fields["tokenizer.ggml.tokens"].data)


def _token_types(vocab_file):
    r = _vocab(vocab_file)
    f = r.fields.get("tokenizer.ggml.token_type")
    n = len(r.fields["tokenizer.ggml.tokens"].data)
    return np.ones(n, dtype=np.int64) if f is None else np.array([f.parts[i][0] for i in f.data])


class _Both:
    """Two writers fed the same calls; the second gets every tensor as float32, dequantized by gguf's own
    reference dequantizer: the same model in float32, written without reading the first file back."""

    def __init__(self, w, w32):
        self.w, self.w32 = w, w32

    def add_tensor(self, name, data, raw_dtype=None):
        x = data if raw_dtype is None else gguf.quants.dequantize(data, raw_dtype)
        self.w32.add_tensor(name, np.ascontiguousarray(x, dtype=np.float32))
        return self.w.add_tensor(name, data) if raw_dtype is None else self.w.add_tensor(name, data, raw_dtype=raw_dtype)

    def __getattr__(self, name):
        a, b = getattr(self.w, name), getattr(self.w32, name)
        return lambda *args, **kw: (b(*args, **kw), a(*args, **kw))[1]


def make(path, arch, wtype, vocab_file, dim=256, layers=2, heads=4, kv_heads=2, ffn=512, context=512,
         seed=0, tied=False, head_dim=None, chain=False, sigma=0.08, f32_copy=None):
    """chain: the output matrix is the embedding with its rows permuted, so the next token is mostly a fixed
    permutation of the last one over the vocabulary's normal tokens, by a wide margin: greedy decoding then
    does not flip on the rounding differences between implementations (llama.cpp quantizes activations to
    8 bits for quantized weights), while every layer still shapes the logits that are compared.
    f32_copy: also write the same model with every tensor dequantized to float32 there."""
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(path, arch)
    if f32_copy:
        w = _Both(w, gguf.GGUFWriter(f32_copy, arch))
    vocab = copy_tokenizer(w, vocab_file)
    hd = head_dim or dim // heads
    w.add_context_length(context)
    w.add_embedding_length(dim)
    w.add_block_count(layers)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    if arch == "gpt2":
        kv_heads = heads
        w.add_layer_norm_eps(1e-5)
    else:
        w.add_head_count_kv(kv_heads)
        w.add_layer_norm_rms_eps(1e-6)
        w.add_rope_freq_base(10000.0 if arch == "llama" else 1000000.0)
        if head_dim:
            w.add_key_length(hd)
            w.add_value_length(hd)
    w.add_file_type(0)
    vec = lambda name, n, base=0.0, s=0.1: w.add_tensor(name, (base + rng.standard_normal(n) * s).astype(np.float32))
    embd = _matrix(rng, w, "token_embd.weight", (vocab, dim), wtype, 1.0)
    if arch == "gpt2":
        vec("position_embd.weight", (context, dim), 0.0, 0.1)
    vec("output_norm.weight", dim, 1.0)
    if arch == "gpt2":
        vec("output_norm.bias", dim)
    if chain:
        normal = np.nonzero(_token_types(vocab_file) == 1)[0]
        prev = np.arange(vocab)
        prev[normal] = normal[rng.permutation(len(normal))]  # row j of the output is the embedding of prev[j]
        _add(w, "output.weight", embd[0][prev], embd[1])
    elif not tied:
        _matrix(rng, w, "output.weight", (vocab, dim), wtype, 0.5)
    q_out, kv_out = heads * hd, kv_heads * hd
    for i in range(layers):
        b = f"blk.{i}."
        vec(b + "attn_norm.weight", dim, 1.0)
        vec(b + "ffn_norm.weight", dim, 1.0)
        if arch == "gpt2":
            vec(b + "attn_norm.bias", dim)
            vec(b + "ffn_norm.bias", dim)
            _matrix(rng, w, b + "attn_qkv.weight", (q_out + 2 * kv_out, dim), wtype, sigma)
            vec(b + "attn_qkv.bias", q_out + 2 * kv_out)
            vec(b + "attn_output.bias", dim)
            vec(b + "ffn_up.bias", ffn)
            vec(b + "ffn_down.bias", dim)
        else:
            _matrix(rng, w, b + "attn_q.weight", (q_out, dim), wtype, sigma)
            _matrix(rng, w, b + "attn_k.weight", (kv_out, dim), wtype, sigma)
            _matrix(rng, w, b + "attn_v.weight", (kv_out, dim), wtype, sigma)
            _matrix(rng, w, b + "ffn_gate.weight", (ffn, dim), wtype, sigma)
            if arch == "qwen2":
                vec(b + "attn_q.bias", q_out)
                vec(b + "attn_k.bias", kv_out)
                vec(b + "attn_v.bias", kv_out)
            if arch == "qwen3":
                vec(b + "attn_q_norm.weight", hd, 1.0)
                vec(b + "attn_k_norm.weight", hd, 1.0)
        _matrix(rng, w, b + "attn_output.weight", (dim, q_out), wtype, sigma)
        _matrix(rng, w, b + "ffn_up.weight", (ffn, dim), wtype, sigma)
        _matrix(rng, w, b + "ffn_down.weight", (dim, ffn), wtype, sigma)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return vocab
