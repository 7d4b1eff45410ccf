#!/usr/bin/env python3
"""Writes the randomized inputs of plumb's differential test against trec_eval.

Deterministic (fixed seeds): rerunning it rewrites identical files. Each set has a qrels file
and runs that exercise what real files hold and trec_eval handles: graded and negative grades,
score ties (broken by docid), query ids that sort differently as text and as numbers, docids
with '#', queries only in the run and only in the qrels, and the same lines in several orders
(grouped by query in file order, grouped in reverse numeric order, fully interleaved).
Usage: make_inputs.py OUTDIR
"""
import random
import sys
from pathlib import Path


def make_set(out: Path, name: str, seed: int, nq: int, ndocs: int, grades, tie_share: float):
    rng = random.Random(seed)
    qids = [str(i) for i in range(1, nq + 1)] + ["q%02d" % i for i in range(3)] + ["1045"]
    qrels_lines = []
    judged = {}
    for q in qids:
        if rng.random() < 0.1:
            continue  # only in the run
        docs = rng.sample(range(ndocs), rng.randint(1, 40))
        judged[q] = docs
        for d in docs:
            qrels_lines.append("%s 0 D%d %d" % (q, d, rng.choice(grades)))
    extra = ["x%d" % i for i in range(2)]  # only in the qrels
    for q in extra:
        for d in rng.sample(range(ndocs), 5):
            qrels_lines.append("%s 0 D%d %d" % (q, d, rng.choice(grades)))
    rng.shuffle(qrels_lines)
    (out / (name + ".qrels")).write_text("\n".join(qrels_lines) + "\n")

    run = []
    for q in qids:
        n = rng.randint(0, 120)
        pool = list(judged.get(q, [])) + rng.sample(range(ndocs), min(ndocs, n))
        seen = set()
        docs = []
        for d in pool:
            if d not in seen and rng.random() < 0.8:
                seen.add(d)
                docs.append(d)
        docs = docs[:n] if n else []
        for rank, d in enumerate(docs, 1):
            score = round(rng.uniform(0, 10), 1) if rng.random() < tie_share else rng.uniform(0, 10)
            did = "D%d" % d if rng.random() < 0.95 else "D%d#%d" % (d, rank)
            run.append((q, did, rank, score))
    def line(r):
        return "%s Q0 %s %d %s run%s" % (r[0], r[1], r[2], repr(r[3]), name)
    (out / (name + ".grouped.run")).write_text("".join(line(r) + "\n" for r in run))
    by_q = {}
    for r in run:
        by_q.setdefault(r[0], []).append(r)
    order = sorted(by_q, key=lambda q: (0, -int(q)) if q.isdigit() else (1, q))
    (out / (name + ".reversed.run")).write_text(
        "".join(line(r) + "\n" for q in order for r in by_q[q]))
    shuffled = list(run)
    rng.shuffle(shuffled)
    (out / (name + ".interleaved.run")).write_text("".join(line(r) + "\n" for r in shuffled))
    # MS MARCO 3-column layout of the grouped run (rank order = score order there).
    ms = []
    for q in by_q:
        # trec_eval's order: score descending, ties by docid descending (strcmp).
        ranked = sorted(by_q[q], key=lambda r: r[1].encode(), reverse=True)
        ranked.sort(key=lambda r: -r[3])
        ms.extend("%s\t%s\t%d\n" % (q, r[1], i) for i, r in enumerate(ranked, 1))
    (out / (name + ".msmarco.run")).write_text("".join(ms))


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    make_set(out, "binary", 11, 25, 300, [0, 0, 0, 1, 1], 0.3)
    make_set(out, "graded", 12, 30, 200, [-1, 0, 0, 1, 2, 3], 0.5)
    make_set(out, "wide", 13, 12, 2000, [0, 1, 2, 3, 4, 7, 12], 0.2)


if __name__ == "__main__":
    main()
