#!/usr/bin/python3
"""PyTorch peer of bench_pipeline's MiniLM-CAT stage (issue 14): the same candidates.

Reads the pairs bench_pipeline wrote with --pairs-out (one line per (query, passage) pair:
qid<TAB>input ids<TAB>token types, the exact token ids plumb's CrossEncoderStage scores, in
query order) and scores each query's pairs as one call, like the re-rank stage does: batches of
--batch pairs grouped by length (dynamic padding), the Hugging Face BertModel computation of
bench_rerank_pytorch.py ("pytorch-hf", MiniLM-sized: 6 x 384, 12 heads, FFN 1536, random
weights, float32, torch.inference_mode) and its dynamic int8 version ("pytorch-hf-int8":
quantize_dynamic(nn.Linear -> qint8), onednn engine). Per query: wall time (ms) of that
query's batches; prints p50 / p99 / mean and "JSON {...}" lines. The token ids are given, so
unlike plumb's stage figure no WordPiece tokenization is timed here. Needs python3-torch.
"""

import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_rerank_pytorch import CONFIGS, VOCAB, HfCrossEncoder, batches  # noqa: E402


def percentile(v, p):
    """Nearest rank, as plumb's Pipeline::stats()."""
    v = sorted(v)
    r = max(1, min(len(v), math.ceil(p * len(v))))
    return v[r - 1]


def read_pairs(path):
    queries = {}
    order = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3:
                sys.exit(f"{path}:{n}: expected qid<TAB>ids<TAB>types")
            qid, ids, types = parts[0], [int(x) for x in parts[1].split()], [int(x) for x in parts[2].split()]
            if len(ids) != len(types) or max(ids) >= VOCAB:
                sys.exit(f"{path}:{n}: ids and types differ in length, or an id >= {VOCAB}")
            if qid not in queries:
                queries[qid] = []
                order.append(qid)
            queries[qid].append((ids, types))
    return [queries[q] for q in order]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", required=True)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--impls", default="hf,hf-int8")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    per_query = read_pairs(args.pairs)
    pairs = sum(len(q) for q in per_query)
    print(f"pytorch {torch.__version__}, {torch.get_num_threads()} threads: {len(per_query)} queries, "
          f"{pairs} pairs, {sum(len(p[0]) for q in per_query for p in q) / max(1, pairs):.1f} tokens per pair")
    for impl in args.impls.split(","):
        model = HfCrossEncoder(**CONFIGS["minilm"]).eval()
        if impl == "hf-int8":
            torch.backends.quantized.engine = "onednn"
            model = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
        ms = []
        with torch.inference_mode():
            for ids, types, mask in batches(per_query[0], args.batch):  # warm-up
                model(ids, types, mask)
            for q in per_query:
                t = time.perf_counter()
                for ids, types, mask in batches(q, args.batch):
                    model(ids, types, mask)
                ms.append(1000 * (time.perf_counter() - t))
        p50, p99, mean = percentile(ms, 0.5), percentile(ms, 0.99), sum(ms) / len(ms)
        print(f"MiniLM-CAT stage pytorch-{impl:8s}: per query p50 {p50:8.2f} ms, p99 {p99:8.2f} ms, "
              f"mean {mean:8.2f} ms")
        print("JSON " + json.dumps({"bench": "pytorch-cat", "impl": "pytorch-" + impl,
                                    "threads": args.threads, "queries": len(per_query),
                                    "pairs": pairs, "p50_ms": p50, "p99_ms": p99, "mean_ms": mean,
                                    "load": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
