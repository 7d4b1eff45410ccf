#!/usr/bin/python3
"""PyTorch peer of bench_rerank (issue 4): the same cross-encoder configs run from Python.

Two PyTorch implementations of the same BERT cross-encoder (random init, float32, CPU,
torch.inference_mode, batches of --batch pairs grouped by length, dynamic padding):
  - "pytorch-hf": the Hugging Face BertModel computation written with torch.nn modules
    (separate Q/K/V projections, additive finfo.min mask, erf GELU, post-LN), as
    transformers' modeling_bert.py does it;
  - "pytorch-fastpath": torch.nn.TransformerEncoder (batch_first, post-LN, GELU) in eval
    mode, which PyTorch 1.13 runs through its fused inference fast path with nested tensors
    (padding skipped) when given a key padding mask.
  - "pytorch-hf-int8": pytorch-hf after torch.ao.quantization.quantize_dynamic(nn.Linear ->
    qint8, the default dynamic qconfig: per-tensor int8 weights, per-batch uint8 activations)
    with the onednn engine (Debian's 1.13 has no fbgemm), the peer of plumb's int8.
Token ids are drawn directly (no tokenizer: plumb's figure includes WordPiece). Lengths follow
bench_rerank: [CLS] 8-token query [SEP] 160-180-token passage [SEP].
Prints human-readable lines and "JSON {...}" lines. Needs Debian's python3-torch.
"""

import argparse
import json
import math
import random
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIGS = {
    "minilm": dict(layers=6, hidden=384, heads=12, intermediate=1536),
    "base": dict(layers=12, hidden=768, heads=12, intermediate=3072),
}
VOCAB = 30522


class HfLayer(nn.Module):
    def __init__(self, h, heads, inter):
        super().__init__()
        self.heads, self.d = heads, h // heads
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.attn_out, self.ln1 = nn.Linear(h, h), nn.LayerNorm(h, eps=1e-12)
        self.inter, self.out, self.ln2 = nn.Linear(h, inter), nn.Linear(inter, h), nn.LayerNorm(h, eps=1e-12)

    def split(self, x):
        b, l, _ = x.shape
        return x.view(b, l, self.heads, self.d).transpose(1, 2)

    def forward(self, x, mask_add):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d) + mask_add
        ctx = torch.matmul(torch.softmax(scores, -1), v).transpose(1, 2).reshape(x.shape)
        x = self.ln1(self.attn_out(ctx) + x)
        return self.ln2(self.out(F.gelu(self.inter(x))) + x)


class HfCrossEncoder(nn.Module):
    def __init__(self, layers, hidden, heads, intermediate):
        super().__init__()
        self.word, self.pos, self.token_type = nn.Embedding(VOCAB, hidden), nn.Embedding(512, hidden), nn.Embedding(2, hidden)
        self.ln = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList([HfLayer(hidden, heads, intermediate) for _ in range(layers)])
        self.pooler, self.classifier = nn.Linear(hidden, hidden), nn.Linear(hidden, 1)

    def forward(self, ids, types, mask):
        l = ids.shape[1]
        x = self.ln(self.word(ids) + self.pos.weight[:l] + self.token_type(types))
        mask_add = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        for layer in self.layers:
            x = layer(x, mask_add)
        return self.classifier(torch.tanh(self.pooler(x[:, 0])))[:, 0]


class FastPathCrossEncoder(nn.Module):
    def __init__(self, layers, hidden, heads, intermediate):
        super().__init__()
        self.word, self.pos, self.token_type = nn.Embedding(VOCAB, hidden), nn.Embedding(512, hidden), nn.Embedding(2, hidden)
        self.ln = nn.LayerNorm(hidden, eps=1e-12)
        layer = nn.TransformerEncoderLayer(hidden, heads, intermediate, dropout=0.0, activation="gelu",
                                           layer_norm_eps=1e-12, batch_first=True, norm_first=False)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=True)
        self.pooler, self.classifier = nn.Linear(hidden, hidden), nn.Linear(hidden, 1)

    def forward(self, ids, types, mask):
        l = ids.shape[1]
        x = self.ln(self.word(ids) + self.pos.weight[:l] + self.token_type(types))
        x = self.encoder(x, src_key_padding_mask=(mask == 0))
        return self.classifier(torch.tanh(self.pooler(x[:, 0])))[:, 0]


def make_pairs(n, seed):
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        q = [rng.randrange(5, VOCAB) for _ in range(8)]
        p = [rng.randrange(5, VOCAB) for _ in range(rng.randint(160, 180))]
        ids = [2] + q + [3] + p + [3]
        types = [0] * (len(q) + 2) + [1] * (len(p) + 1)
        pairs.append((ids, types))
    return pairs


def batches(pairs, batch):
    order = sorted(range(len(pairs)), key=lambda i: -len(pairs[i][0]))
    for s in range(0, len(order), batch):
        idx = order[s:s + batch]
        l = len(pairs[idx[0]][0])
        ids = torch.zeros(len(idx), l, dtype=torch.long)
        types = torch.zeros(len(idx), l, dtype=torch.long)
        mask = torch.zeros(len(idx), l, dtype=torch.long)
        for r, i in enumerate(idx):
            a, t = pairs[i]
            ids[r, :len(a)] = torch.tensor(a)
            types[r, :len(a)] = torch.tensor(t)
            mask[r, :len(a)] = 1
        yield ids, types, mask


def flops(cfg, l):
    h, i = cfg["hidden"], cfg["intermediate"]
    return cfg["layers"] * (2 * l * h * 3 * h + 4 * l * l * h + 2 * l * h * h + 4 * l * h * i)


def peak(n=2048, reps=5):
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    best = 0.0
    for _ in range(reps):
        t = time.perf_counter()
        torch.mm(a, b)
        best = max(best, 2 * n ** 3 / (time.perf_counter() - t) / 1e9)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--candidates", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--models", default="minilm,base")
    ap.add_argument("--impls", default="hf,fastpath,hf-int8")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    pk = peak()
    print(f"pytorch {torch.__version__}, {torch.get_num_threads()} threads, matmul peak {pk:.1f} GFLOP/s")
    print("JSON " + json.dumps({"bench": "peak", "impl": "pytorch", "gflops": pk}))
    for name in args.models.split(","):
        cfg = CONFIGS[name]
        pairs = make_pairs(args.candidates, 1)
        total_flops = sum(flops(cfg, len(p[0])) for p in pairs)
        for impl in args.impls.split(","):
            cls = FastPathCrossEncoder if impl == "fastpath" else HfCrossEncoder
            model = cls(**cfg).eval()
            if impl == "hf-int8":
                torch.backends.quantized.engine = "onednn"
                model = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
            with torch.inference_mode():
                for ids, types, mask in batches(pairs[:args.batch], args.batch):  # warm-up
                    model(ids, types, mask)
                t = time.perf_counter()
                for ids, types, mask in batches(pairs, args.batch):
                    model(ids, types, mask)
                s = time.perf_counter() - t
            gf = total_flops / s / 1e9
            print(f"bert-cat {name:8s} pytorch-{impl:9s} {args.candidates} pairs: {s:.2f} s, "
                  f"{args.candidates / s:.1f} pairs/s, {gf:.1f} GFLOP/s ({100 * gf / pk:.0f}% of peak)")
            print("JSON " + json.dumps({"bench": "bert-cat", "impl": "pytorch-" + impl, "model": name,
                                        "pairs": args.candidates, "seconds": s,
                                        "pairs_per_s": args.candidates / s, "gflops": gf,
                                        "peak_gflops": pk}))


if __name__ == "__main__":
    main()
