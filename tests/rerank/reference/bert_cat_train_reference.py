#!/usr/bin/python3
"""Independent PyTorch reference for `plumb train --model cat` (issue 13).

A plain BERT cross-encoder written from the BERT paper / Hugging Face's BertForSequenceClassification
definition (post-LN encoder, exact-erf GELU, [CLS] -> pooler (dense + tanh) -> 1-logit classifier),
trained with torch.optim.AdamW (betas 0.9/0.999, eps 1e-8, weight decay on every weight that is not a
bias or a LayerNorm parameter), plumb's documented schedule (rerank/trainer.hpp lr_multiplier: s/W while
s <= W, then (T - s + 1)/(T - W)), global-norm clipping and the hinge loss max(0, m - s+ + s-) averaged
over the batch. The triples are read in file order (plumb train --shuffle-buffer 0), B per step.
Nothing here is taken from plumb's C++ code; only the file formats (safetensors, vocab.txt) are shared.

Needs Debian's python3-torch (1.13.1+dfsg) and numpy; no transformers / safetensors modules.

  make-init SRC OUT --seed S [--word-std X]: OUT = SRC (a `plumb bert-init` folder) + a pooler and a
      1-label classifier drawn as transformers does (normal(0, 0.02), zero bias) with torch's seed S,
      dropout 0 in config.json; written as model.safetensors so that plumb and this script start from
      the same weights.
  train INIT TRIPLES --steps N --batch B --lr LR --warmup W --clip C [--freeze-word-embeddings]
      [--save-at 1,10 --save-dir D] [--losses FILE] [--prenorm] [--mean-pool] [--dropout P]
      [--eval-triples FILE --eval-every N] ...: per-step loss and diagnostics (JSON lines).
  fixture: writes tiny_bert_cat_train/ next to this script (the regression fixture of
      Trainer.BertCatStepsMatchPyTorch); run from anywhere as  /usr/bin/python3 bert_cat_train_reference.py fixture
      (deterministic: re-running it gives the same files).

The issue-13 comparison (README, "What was tried", third round) was run as
  bert_cat_train_reference.py make-init <run>/p000/bert-init init --seed 7
  bert_cat_train_reference.py train init tri.tsv --steps 100 --freeze-word-embeddings --losses ref.jsonl
next to  plumb train --model cat --init init --triples tri.tsv --batch 16 --lr 1e-3 --warmup 10 --clip 1
  --max-length 160 --freeze-word-embeddings --shuffle-buffer 0 --log-every 1 --no-tune --seed 42
  --threads 1 --steps 100 --output p100   (tri.tsv: 1,600 lines of the 000 collection's triples.train.tsv).
"""
import argparse
import json
import math
import os
import struct
import sys
import unicodedata

import numpy as np
import torch

# ---------------------------------------------------------------------------------------------
# safetensors (format: u64 little-endian header length, JSON header, raw little-endian buffer)


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        buf = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", (path, name, t["dtype"])
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(buf[a:b], dtype="<f4").reshape(t["shape"]).copy()
    return out


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype="<f4")
        blob = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------
# BERT's tokenizer (basic: lower case, strip accents, split on whitespace and punctuation; then
# WordPiece greedy longest-match-first with ## continuations), as the BERT repository's tokenization.py


class WordPiece:
    def __init__(self, vocab_path):
        with open(vocab_path, encoding="utf-8") as f:
            self.vocab = {w.rstrip("\n"): i for i, w in enumerate(f)}
        self.unk = self.vocab["[UNK]"]

    @staticmethod
    def _is_punct(ch):
        cp = ord(ch)
        if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
            return True
        return unicodedata.category(ch).startswith("P")

    def basic(self, text):
        text = unicodedata.normalize("NFD", text.lower())
        text = "".join(c for c in text if unicodedata.category(c) != "Mn")
        words = []
        for w in text.split():
            cur = ""
            for c in w:
                if self._is_punct(c):
                    if cur:
                        words.append(cur)
                    words.append(c)
                    cur = ""
                else:
                    cur += c
            if cur:
                words.append(cur)
        return words

    def ids(self, text):
        out = []
        for w in self.basic(text):
            if len(w) > 100:
                out.append(self.unk)
                continue
            start, pieces = 0, []
            while start < len(w):
                end, cur = len(w), None
                while start < end:
                    s = w[start:end] if start == 0 else "##" + w[start:end]
                    if s in self.vocab:
                        cur = self.vocab[s]
                        break
                    end -= 1
                if cur is None:
                    pieces = [self.unk]
                    break
                pieces.append(cur)
                start = end
            out.extend(pieces)
        return out

    def pair(self, query, passage, max_length):
        """[CLS] q [SEP] p [SEP]; the passage is cut first (then the query) to fit max_length."""
        q, p = self.ids(query), self.ids(passage)
        room = max_length - 3
        p = p[: max(0, room - len(q))]
        q = q[: room - len(p)]
        ids = [self.vocab["[CLS]"]] + q + [self.vocab["[SEP]"]] + p + [self.vocab["[SEP]"]]
        types = [0] * (len(q) + 2) + [1] * (len(p) + 1)
        return ids, types


# ---------------------------------------------------------------------------------------------
# The model (Devlin et al. 2019; Hugging Face BertModel's post-LN layout, parameter names as HF's)


class Layer(torch.nn.Module):
    def __init__(self, h, heads, inter, eps, prenorm, dropout=0.0):
        super().__init__()
        self.heads, self.prenorm = heads, prenorm
        self.drop = torch.nn.Dropout(dropout)
        self.query = torch.nn.Linear(h, h)
        self.key = torch.nn.Linear(h, h)
        self.value = torch.nn.Linear(h, h)
        self.attn_out = torch.nn.Linear(h, h)
        self.ln1 = torch.nn.LayerNorm(h, eps=eps)
        self.inter = torch.nn.Linear(h, inter)
        self.out = torch.nn.Linear(inter, h)
        self.ln2 = torch.nn.LayerNorm(h, eps=eps)

    def attention(self, x, bias):
        b, l, h = x.shape
        d = h // self.heads
        split = lambda t: t.view(b, l, self.heads, d).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        s = q @ k.transpose(-1, -2) / math.sqrt(d) + bias
        c = self.drop(torch.softmax(s, -1)) @ v
        return self.drop(self.attn_out(c.transpose(1, 2).reshape(b, l, h)))

    def ffn(self, x):
        return self.drop(self.out(torch.nn.functional.gelu(self.inter(x))))

    def forward(self, x, bias):
        if self.prenorm:  # pre-LN variant (Xiong et al. 2020), for the "what makes it train" checks
            x = x + self.attention(self.ln1(x), bias)
            return x + self.ffn(self.ln2(x))
        x = self.ln1(x + self.attention(x, bias))
        return self.ln2(x + self.ffn(x))


class CrossEncoder(torch.nn.Module):
    def __init__(self, cfg, prenorm=False, mean_pool=False, dropout=0.0):
        super().__init__()
        self.drop = torch.nn.Dropout(dropout)
        self.mean_pool = mean_pool
        h, eps = cfg["hidden_size"], cfg["layer_norm_eps"]
        self.word = torch.nn.Embedding(cfg["vocab_size"], h)
        self.pos = torch.nn.Embedding(cfg["max_position_embeddings"], h)
        self.tok_type = torch.nn.Embedding(cfg["type_vocab_size"], h)
        self.emb_ln = torch.nn.LayerNorm(h, eps=eps)
        self.layers = torch.nn.ModuleList(
            Layer(h, cfg["num_attention_heads"], cfg["intermediate_size"], eps, prenorm, dropout)
            for _ in range(cfg["num_hidden_layers"]))
        self.final_ln = torch.nn.LayerNorm(h, eps=eps) if prenorm else None
        self.pooler = torch.nn.Linear(h, h)
        self.classifier = torch.nn.Linear(h, 1)

    def forward(self, ids, types, mask):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.drop(self.emb_ln(self.word(ids) + self.pos(pos) + self.tok_type(types)))
        bias = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        for layer in self.layers:
            x = layer(x, bias)
        if self.final_ln is not None:
            x = self.final_ln(x)
        self.cls = x[:, 0].detach()
        if self.mean_pool:  # mean of the pair's tokens instead of [CLS] (a variant, not BERT-CAT)
            m = mask.unsqueeze(-1).float()
            first = (x * m).sum(1) / m.sum(1)
        else:
            first = x[:, 0]
        pooled = torch.tanh(self.pooler(first))
        self.pooled = pooled.detach()
        return self.classifier(self.drop(pooled)).squeeze(-1)

    # HF name <-> module parameter
    def hf_names(self):
        m = {"bert.embeddings.word_embeddings.weight": self.word.weight,
             "bert.embeddings.position_embeddings.weight": self.pos.weight,
             "bert.embeddings.token_type_embeddings.weight": self.tok_type.weight,
             "bert.embeddings.LayerNorm.weight": self.emb_ln.weight,
             "bert.embeddings.LayerNorm.bias": self.emb_ln.bias,
             "bert.pooler.dense.weight": self.pooler.weight,
             "bert.pooler.dense.bias": self.pooler.bias,
             "classifier.weight": self.classifier.weight,
             "classifier.bias": self.classifier.bias}
        for i, L in enumerate(self.layers):
            p = f"bert.encoder.layer.{i}."
            for name, lin in [("attention.self.query", L.query), ("attention.self.key", L.key),
                              ("attention.self.value", L.value), ("attention.output.dense", L.attn_out),
                              ("intermediate.dense", L.inter), ("output.dense", L.out)]:
                m[p + name + ".weight"], m[p + name + ".bias"] = lin.weight, lin.bias
            for name, ln in [("attention.output.LayerNorm", L.ln1), ("output.LayerNorm", L.ln2)]:
                m[p + name + ".weight"], m[p + name + ".bias"] = ln.weight, ln.bias
        return m


def load(folder, prenorm=False, mean_pool=False, dropout=0.0):
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    model = CrossEncoder(cfg, prenorm, mean_pool, dropout)
    w = read_safetensors(os.path.join(folder, "model.safetensors"))
    names = model.hf_names()
    with torch.no_grad():
        for name, p in names.items():
            if name in w:
                p.copy_(torch.from_numpy(w[name]))
            elif not (prenorm or name.startswith(("bert.pooler", "classifier"))):
                sys.exit(f"{folder}: {name} missing")
    return model, cfg


# ---------------------------------------------------------------------------------------------


def make_init(a):
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.src, "config.json")) as f:
        cfg = json.load(f)
    w = read_safetensors(os.path.join(a.src, "model.safetensors"))
    w = {("bert." + k if not k.startswith("bert.") else k): v for k, v in w.items()}
    h = cfg["hidden_size"]
    g = torch.Generator().manual_seed(a.seed)
    w["bert.pooler.dense.weight"] = torch.normal(0.0, 0.02, (h, h), generator=g).numpy()
    w["bert.pooler.dense.bias"] = np.zeros(h, np.float32)
    w["classifier.weight"] = torch.normal(0.0, a.head_std, (1, h), generator=g).numpy()
    w["classifier.bias"] = np.zeros(1, np.float32)
    cfg.update(architectures=["BertForSequenceClassification"], num_labels=1,
               id2label={"0": "LABEL_0"}, label2id={"LABEL_0": 0},
               hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    write_safetensors(os.path.join(a.out, "model.safetensors"), w)
    for name in ("vocab.txt", "tokenizer_config.json"):
        with open(os.path.join(a.src, name), "rb") as s, open(os.path.join(a.out, name), "wb") as d:
            d.write(s.read())


def lr_multiplier(s, warmup, total, decay=True):
    if warmup and s <= warmup:
        return s / warmup
    if decay and total > warmup:
        return (total - s + 1) / (total - warmup)
    return 1.0


def encode(tok, batch, max_length):
    enc = []
    for q, p, n in batch:
        enc.append(tok.pair(q, p, max_length))
        enc.append(tok.pair(q, n, max_length))
    l = max(len(e[0]) for e in enc)
    ids = torch.zeros(len(enc), l, dtype=torch.long)
    types = torch.zeros_like(ids)
    mask = torch.zeros_like(ids)
    for i, (e, t) in enumerate(enc):
        ids[i, : len(e)] = torch.tensor(e)
        types[i, : len(t)] = torch.tensor(t)
        mask[i, : len(e)] = 1
    return ids, types, mask


def heldout_accuracy(model, tok, path, max_length):
    """Share of held-out triples whose positive scores above the negative."""
    with open(path, encoding="utf-8") as f:
        triples = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    right = 0
    with torch.no_grad():
        for i in range(0, len(triples), 32):
            s = model(*encode(tok, triples[i:i + 32], max_length)).view(-1, 2)
            right += (s[:, 0] > s[:, 1]).sum().item()
    return right / len(triples)


def train(a):
    torch.manual_seed(a.seed)
    torch.set_num_threads(1)
    model, cfg = load(a.init, a.prenorm, a.mean_pool, a.dropout)
    model.train()
    tok = WordPiece(os.path.join(a.init, "vocab.txt"))
    names = model.hf_names()
    if a.freeze_word_embeddings:
        model.word.weight.requires_grad_(False)
    decay, no_decay = [], []
    for name, p in names.items():
        if not p.requires_grad:
            continue
        (no_decay if name.endswith(".bias") or "LayerNorm" in name else decay).append(p)
    if model.final_ln is not None:
        no_decay += [model.final_ln.weight, model.final_ln.bias]
    if a.head_lr:
        head = {id(model.classifier.weight), id(model.classifier.bias),
                id(model.pooler.weight), id(model.pooler.bias)}
        groups = []
        for ps, wd in ((decay, a.weight_decay), (no_decay, 0.0)):
            groups.append({"params": [p for p in ps if id(p) not in head], "weight_decay": wd, "lr": a.lr})
            groups.append({"params": [p for p in ps if id(p) in head], "weight_decay": wd, "lr": a.head_lr})
    else:
        groups = [{"params": decay, "weight_decay": a.weight_decay, "lr": a.lr},
                  {"params": no_decay, "weight_decay": 0.0, "lr": a.lr}]
    for gr in groups:
        gr["base_lr"] = gr["lr"]
    opt = torch.optim.AdamW(groups, lr=a.lr, betas=(0.9, 0.999), eps=1e-8)

    with open(a.triples, encoding="utf-8") as f:
        triples = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    save_at = {int(s) for s in a.save_at.split(",") if s} if a.save_at else set()
    out = open(a.losses, "w") if a.losses else (open(os.devnull, "w") if a.quiet else sys.stdout)
    records = []
    pos = 0
    for step in range(1, a.steps + 1):
        batch = []
        for _ in range(a.batch):
            batch.append(triples[pos % len(triples)])
            pos += 1
        scores = model(*encode(tok, batch, a.max_length)).view(-1, 2)
        if a.objective == "hinge":
            loss = torch.clamp(a.margin - scores[:, 0] + scores[:, 1], min=0).mean()
        else:  # softmax cross-entropy, positive first
            loss = torch.nn.functional.cross_entropy(scores, torch.zeros(len(batch), dtype=torch.long))
        opt.zero_grad()
        loss.backward()
        params = [p for gr in groups for p in gr["params"]]
        norm = torch.nn.utils.clip_grad_norm_(params, a.clip) if a.clip > 0 else \
            torch.norm(torch.stack([p.grad.norm() for p in params]))
        m = lr_multiplier(step, a.warmup, a.steps, not a.no_decay)
        for gr in groups:
            gr["lr"] = gr["base_lr"] * m
        opt.step()
        acc = (scores[:, 0] > scores[:, 1]).float().mean().item()
        records.append({"step": step, "loss": loss.item(), "grad_norm": float(norm), "lr": a.lr * m})
        print(json.dumps({"step": step, "loss": loss.item(), "grad_norm": float(norm),
                          "lr": a.lr * m, "train_acc": acc,
                          "score_std": scores.detach().std().item(),
                          # diagnostics: share of saturated pooler units, spread of [CLS] over the batch
                          "pooler_saturated": (model.pooled.abs() > 0.99).float().mean().item(),
                          "cls_spread": model.cls.std(0).mean().item(),
                          "classifier_norm": model.classifier.weight.norm().item()}), file=out, flush=True)
        if a.eval_triples and a.eval_every and step % a.eval_every == 0:
            print(json.dumps({"step": step, "heldout_acc": heldout_accuracy(
                model, tok, a.eval_triples, a.max_length)}), file=out, flush=True)
        if step in save_at:
            os.makedirs(a.save_dir, exist_ok=True)
            write_safetensors(os.path.join(a.save_dir, f"step{step}.safetensors"),
                              {k: v.detach().numpy() for k, v in names.items()})
    return records, {k: v.detach().numpy().copy() for k, v in names.items()}


# The regression fixture of tests/rerank/test_trainer.cpp (Trainer.BertCatStepsMatchPyTorch): the
# tiny reference cross-encoder of bert_reference.py (tiny_bert_cat1: 2 layers x 8 hidden, 1-label
# head), dropout 0, trained 12 steps of 4 on TRIPLES in file order under two settings.
TRIPLES = [
    ("where is the cat", "the cat sat on the mat", "a big red car"),
    ("what is the dog", "the dog ran", "blue fish swim"),
    ("where is the bird", "a bird fly on a tree", "hello world"),
    ("what is a fish", "a blue fish swim", "the red car ran"),
    ("where is a car", "the big red car ran", "a cat sat on a tree"),
    ("what is the tree", "a bird on the big tree", "the dog swims"),
    ("where is the mat", "the mat is red", "what is a bird"),
    ("what is hello", "hello world", "the blue car is big"),
]
FIXTURE_RUNS = {
    # the job's BERT-CAT recipe in small: hinge, frozen word embeddings, warm-up + linear decay,
    # an active clip, weight decay large enough to show where it applies
    "hinge_frozen": dict(objective="hinge", lr=1e-2, warmup=3, no_decay=False, clip=0.5,
                         weight_decay=0.1, freeze_word_embeddings=True),
    # softmax cross-entropy, every parameter trained, no clip, constant rate
    "ce": dict(objective="ce", lr=5e-3, warmup=0, no_decay=True, clip=0.0, weight_decay=0.01,
               freeze_word_embeddings=False),
}


def fixture(a):
    here = os.path.dirname(os.path.abspath(__file__))
    src, out = os.path.join(here, "tiny_bert_cat1"), os.path.join(here, "tiny_bert_cat_train")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    cfg.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    for name in ("model.safetensors", "vocab.txt"):
        with open(os.path.join(src, name), "rb") as s, open(os.path.join(out, name), "wb") as d:
            d.write(s.read())
    with open(os.path.join(out, "triples.tsv"), "w") as f:
        for t in TRIPLES:
            f.write("\t".join(t) + "\n")
    expected = {"generator": "tests/rerank/reference/bert_cat_train_reference.py fixture",
                "torch": torch.__version__, "python_torch_package": "Debian python3-torch 1.13.1+dfsg-4",
                "steps": 12, "batch": 4, "margin": 1.0, "max_length": 32, "runs": {}}
    for name, run in FIXTURE_RUNS.items():
        ns = argparse.Namespace(init=out, triples=os.path.join(out, "triples.tsv"), steps=12, batch=4,
                                head_lr=0.0, dropout=0.0, margin=1.0, max_length=32, prenorm=False, mean_pool=False,
                                seed=42, save_at="", save_dir=".", losses="", quiet=True,
                                eval_triples="", eval_every=0, **run)
        records, weights = train(ns)
        expected["runs"][name] = dict(run, losses=[r["loss"] for r in records],
                                      grad_norms=[r["grad_norm"] for r in records])
        write_safetensors(os.path.join(out, f"expected_{name}.safetensors"), weights)
    with open(os.path.join(out, "expected_train.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make-init")
    m.add_argument("src")
    m.add_argument("out")
    m.add_argument("--seed", type=int, default=7)
    m.add_argument("--head-std", type=float, default=0.02)
    t = sub.add_parser("train")
    t.add_argument("init")
    t.add_argument("triples")
    t.add_argument("--steps", type=int, default=100)
    t.add_argument("--batch", type=int, default=16)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--head-lr", type=float, default=0.0)
    t.add_argument("--warmup", type=int, default=10)
    t.add_argument("--no-decay", action="store_true")
    t.add_argument("--clip", type=float, default=1.0)
    t.add_argument("--weight-decay", type=float, default=0.01)
    t.add_argument("--margin", type=float, default=1.0)
    t.add_argument("--objective", choices=["hinge", "ce"], default="hinge")
    t.add_argument("--max-length", type=int, default=160)
    t.add_argument("--freeze-word-embeddings", action="store_true")
    t.add_argument("--prenorm", action="store_true")
    t.add_argument("--mean-pool", action="store_true")
    t.add_argument("--dropout", type=float, default=0.0,
                   help="hidden, attention and classifier dropout (torch's own masks: not plumb's)")
    t.add_argument("--eval-triples", default="")
    t.add_argument("--eval-every", type=int, default=0)
    t.add_argument("--seed", type=int, default=42)
    t.add_argument("--save-at", default="")
    t.add_argument("--save-dir", default=".")
    t.add_argument("--losses", default="")
    t.add_argument("--quiet", action="store_true")
    sub.add_parser("fixture")
    a = ap.parse_args()
    {"make-init": make_init, "train": train, "fixture": fixture}[a.cmd](a)


if __name__ == "__main__":
    main()
