#!/usr/bin/python3
"""Independent reference for plumb's BERT / DistilBERT encoder (pure numpy, float64).

Builds tiny fixed-weight models (seeded numpy), writes Hugging Face style checkpoint folders
(config.json, vocab.txt, model.safetensors written by hand: 8-byte header length + JSON header +
raw little-endian F32 data) and the expected outputs in expected.json:
  - last hidden state of every token of each input (computed one input at a time, no padding),
  - the pooled output, the cross-encoder logits.
The math follows the Hugging Face definitions (BertModel, BertForSequenceClassification,
DistilBertForSequenceClassification): post-LN residual blocks, erf GELU ("gelu") or the tanh
approximation ("gelu_new"), softmax attention, LayerNorm with the config's eps.

Run once offline from this directory:  /usr/bin/python3 bert_reference.py
The generated folders are committed as test fixtures (a few KB each).
"""

import json
import math
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
         "the", "cat", "sat", "on", "mat", "dog", "ran", "a", "big", "red",
         "blue", "fish", "swim", "##s", "##ing", "hello", "world", "what", "is", "where",
         "bird", "fly", "tree", "car", "."]
assert len(VOCAB) == 30
TOK = {t: i for i, t in enumerate(VOCAB)}

HIDDEN, LAYERS, HEADS, INTER, MAXPOS, TYPES = 8, 2, 2, 16, 32, 2


def write_safetensors(path, tensors):
    header = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name, arr in tensors.items():
        data = np.ascontiguousarray(arr, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    hjson = json.dumps(header, separators=(",", ":")).encode()
    hjson += b" " * ((8 - len(hjson) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for b in blobs:
            f.write(b)


def make_weights(seed, distil):
    rng = np.random.RandomState(seed)

    def w(*shape, scale=0.5):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def ln():
        return ((1.0 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32),
                (0.1 * rng.standard_normal(HIDDEN)).astype(np.float32))

    p = {}
    p["word"] = w(len(VOCAB), HIDDEN)
    p["pos"] = w(MAXPOS, HIDDEN)
    if not distil:
        p["type"] = w(TYPES, HIDDEN)
    p["emb_ln"] = ln()
    p["layers"] = []
    for _ in range(LAYERS):
        L = {}
        for n in ("q", "k", "v", "o"):
            L[n] = (w(HIDDEN, HIDDEN), w(HIDDEN, scale=0.1))
        L["ln1"] = ln()
        L["i"] = (w(INTER, HIDDEN), w(INTER, scale=0.1))
        L["out"] = (w(HIDDEN, INTER), w(HIDDEN, scale=0.1))
        L["ln2"] = ln()
        p["layers"].append(L)
    p["pooler"] = (w(HIDDEN, HIDDEN), w(HIDDEN, scale=0.1))   # BERT pooler / DistilBERT pre_classifier
    p["cls1"] = (w(1, HIDDEN), w(1, scale=0.1))
    p["cls2"] = (w(2, HIDDEN), w(2, scale=0.1))
    return p


def layer_norm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def linear(x, wb):
    W, b = wb
    return x @ W.astype(np.float64).T + b.astype(np.float64)


def encode(p, ids, types, act, eps):
    ids = np.asarray(ids)
    n = len(ids)
    x = p["word"][ids].astype(np.float64) + p["pos"][:n].astype(np.float64)
    if "type" in p:
        x = x + p["type"][np.asarray(types)].astype(np.float64)
    x = layer_norm(x, *p["emb_ln"], eps)
    dh = HIDDEN // HEADS
    for L in p["layers"]:
        q, k, v = linear(x, L["q"]), linear(x, L["k"]), linear(x, L["v"])
        ctx = np.zeros_like(x)
        for h in range(HEADS):
            s = slice(h * dh, (h + 1) * dh)
            sc = q[:, s] @ k[:, s].T / math.sqrt(dh)
            sc = sc - sc.max(-1, keepdims=True)
            a = np.exp(sc)
            a = a / a.sum(-1, keepdims=True)
            ctx[:, s] = a @ v[:, s]
        x = layer_norm(linear(ctx, L["o"]) + x, *L["ln1"], eps)
        hmid = act(linear(x, L["i"]))
        x = layer_norm(linear(hmid, L["out"]) + x, *L["ln2"], eps)
    return x


def basic_tokens(text):
    out = []
    for word in text.lower().split():
        cur = ""
        for ch in word:
            if ch in ".,?!":
                if cur:
                    out.append(cur)
                out.append(ch)
                cur = ""
            else:
                cur += ch
        if cur:
            out.append(cur)
    return out


def wordpiece(word):
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        found = None
        while start < end:
            sub = word[start:end] if start == 0 else "##" + word[start:end]
            if sub in TOK:
                found = sub
                break
            end -= 1
        if found is None:
            return ["[UNK]"]
        pieces.append(found)
        start = end
    return pieces


def encode_pair(q, d):
    qt = [t for w in basic_tokens(q) for t in wordpiece(w)]
    dt = [t for w in basic_tokens(d) for t in wordpiece(w)]
    toks = ["[CLS]"] + qt + ["[SEP]"] + dt + ["[SEP]"]
    types = [0] * (len(qt) + 2) + [1] * (len(dt) + 1)
    return [TOK[t] for t in toks], types


def encode_single(t):
    tt = [x for w in basic_tokens(t) for x in wordpiece(w)]
    toks = ["[CLS]"] + tt + ["[SEP]"]
    return [TOK[x] for x in toks], [0] * len(toks)


PAIRS = [
    ("what is the cat", "the cat sat on the mat."),
    ("where", "a big red dog ran."),
    ("fish swim", "hello world"),
    ("bird", "the big blue bird is flying on a tree. the car is red. cats sat."),
]
SINGLES = ["the cat sat", "hello", "big red cars swimming on the mat ."]


def bert_tensors(p, prefix, pooler=True, head=None):
    t = {}
    t[prefix + "embeddings.word_embeddings.weight"] = p["word"]
    t[prefix + "embeddings.position_embeddings.weight"] = p["pos"]
    t[prefix + "embeddings.token_type_embeddings.weight"] = p["type"]
    t[prefix + "embeddings.LayerNorm.weight"], t[prefix + "embeddings.LayerNorm.bias"] = p["emb_ln"]
    for i, L in enumerate(p["layers"]):
        b = f"{prefix}encoder.layer.{i}."
        for n, hf in (("q", "attention.self.query"), ("k", "attention.self.key"),
                      ("v", "attention.self.value"), ("o", "attention.output.dense"),
                      ("i", "intermediate.dense"), ("out", "output.dense")):
            t[b + hf + ".weight"], t[b + hf + ".bias"] = L[n]
        t[b + "attention.output.LayerNorm.weight"], t[b + "attention.output.LayerNorm.bias"] = L["ln1"]
        t[b + "output.LayerNorm.weight"], t[b + "output.LayerNorm.bias"] = L["ln2"]
    if pooler:
        t[prefix + "pooler.dense.weight"], t[prefix + "pooler.dense.bias"] = p["pooler"]
    if head is not None:
        t["classifier.weight"], t["classifier.bias"] = p[head]
    return t


def distil_tensors(p, head):
    t = {}
    pre = "distilbert."
    t[pre + "embeddings.word_embeddings.weight"] = p["word"]
    t[pre + "embeddings.position_embeddings.weight"] = p["pos"]
    t[pre + "embeddings.LayerNorm.weight"], t[pre + "embeddings.LayerNorm.bias"] = p["emb_ln"]
    for i, L in enumerate(p["layers"]):
        b = f"{pre}transformer.layer.{i}."
        for n, hf in (("q", "attention.q_lin"), ("k", "attention.k_lin"), ("v", "attention.v_lin"),
                      ("o", "attention.out_lin"), ("i", "ffn.lin1"), ("out", "ffn.lin2")):
            t[b + hf + ".weight"], t[b + hf + ".bias"] = L[n]
        t[b + "sa_layer_norm.weight"], t[b + "sa_layer_norm.bias"] = L["ln1"]
        t[b + "output_layer_norm.weight"], t[b + "output_layer_norm.bias"] = L["ln2"]
    t["pre_classifier.weight"], t["pre_classifier.bias"] = p["pooler"]
    t["classifier.weight"], t["classifier.bias"] = p[head]
    return t


def bert_config(act, arch, labels):
    c = {"model_type": "bert", "architectures": [arch], "vocab_size": len(VOCAB),
         "hidden_size": HIDDEN, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
         "intermediate_size": INTER, "hidden_act": act, "max_position_embeddings": MAXPOS,
         "type_vocab_size": TYPES, "layer_norm_eps": 1e-12, "pad_token_id": 0,
         "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}
    if labels:
        c["id2label"] = {str(i): f"LABEL_{i}" for i in range(labels)}
        c["label2id"] = {f"LABEL_{i}": i for i in range(labels)}
    return c


def distil_config(labels):
    return {"model_type": "distilbert", "architectures": ["DistilBertForSequenceClassification"],
            "vocab_size": len(VOCAB), "dim": HIDDEN, "n_layers": LAYERS, "n_heads": HEADS,
            "hidden_dim": INTER, "activation": "gelu", "max_position_embeddings": MAXPOS,
            "sinusoidal_pos_embds": False, "pad_token_id": 0, "dropout": 0.1,
            "id2label": {str(i): f"LABEL_{i}" for i in range(labels)},
            "label2id": {f"LABEL_{i}": i for i in range(labels)}}


def write_folder(name, config, tensors):
    d = os.path.join(HERE, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    with open(os.path.join(d, "vocab.txt"), "w") as f:
        f.write("\n".join(VOCAB) + "\n")
    write_safetensors(os.path.join(d, "model.safetensors"), tensors)


def cases(p, act, eps, distil, head):
    out = []
    for kind, items in (("pair", PAIRS), ("single", SINGLES)):
        for item in items:
            ids, types = encode_pair(*item) if kind == "pair" else encode_single(item)
            h = encode(p, ids, types, act, eps)
            cls = h[0]
            if distil:
                pooled = np.maximum(linear(cls[None], p["pooler"])[0], 0.0)  # pre_classifier+ReLU
            else:
                pooled = np.tanh(linear(cls[None], p["pooler"])[0])
            logits = linear(pooled[None], p[head])[0] if head else None
            mask_mean = h.mean(0)
            case = {"kind": kind, "text": list(item) if kind == "pair" else [item],
                    "input_ids": ids, "token_type_ids": types,
                    "last_hidden": h.reshape(-1).tolist(), "cls": cls.tolist(),
                    "mean": mask_mean.tolist(), "pooled": pooled.tolist()}
            if logits is not None:
                case["logits"] = logits.tolist()
            out.append(case)
    return out


def main():
    pb = make_weights(1234, distil=False)
    pd = make_weights(4321, distil=True)
    expected = {"hidden_size": HIDDEN, "models": {}}

    write_folder("tiny_bert_cat1", bert_config("gelu", "BertForSequenceClassification", 1),
                 bert_tensors(pb, "bert.", pooler=True, head="cls1"))
    expected["models"]["tiny_bert_cat1"] = cases(pb, gelu, 1e-12, False, "cls1")

    write_folder("tiny_bert_cat2_gelu_new",
                 bert_config("gelu_new", "BertForSequenceClassification", 2),
                 bert_tensors(pb, "bert.", pooler=True, head="cls2"))
    expected["models"]["tiny_bert_cat2_gelu_new"] = cases(pb, gelu_new, 1e-12, False, "cls2")

    write_folder("tiny_bert_base", bert_config("gelu", "BertModel", 0),
                 bert_tensors(pb, "", pooler=False, head=None))
    expected["models"]["tiny_bert_base"] = cases(pb, gelu, 1e-12, False, None)

    write_folder("tiny_distilbert_cat2", distil_config(2), distil_tensors(pd, "cls2"))
    expected["models"]["tiny_distilbert_cat2"] = cases(pd, gelu, 1e-12, True, "cls2")

    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
