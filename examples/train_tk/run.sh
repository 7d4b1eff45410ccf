#!/usr/bin/env bash
# Train a small TK for a few minutes on a generated corpus and compare it with BM25 on held-out
# queries (MRR@10 and nDCG@10): issue 6's evidence that training works.
#
#   examples/train_tk/run.sh [WORK_DIR]        (PLUMB=path/to/plumb, default build/plumb)
#
# Steps: `plumb generate --planted` (train / dev / test queries; relevant passages hold every
# query word plus an answer span, hard negatives most query words: BM25 cannot tell them apart
# well, a matching model can); `plumb index`; BM25 top 1000 for the held-out test queries;
# random word vectors for the corpus words (uniform in [-1.5, 1.5]: about GloVe's norm, so the
# words are not drowned by TK's positional features), `plumb tk-init` with frozen embeddings (1
# layer, 4 heads); `plumb train --model tk` with the pairwise hinge loss on the generator's
# train triples, validated on the dev queries (best checkpoint kept); `plumb rerank --type tk`
# of the BM25 top DEPTH of the test queries; `plumb eval` of both runs. Exits 1 when TK does not
# beat BM25 on MRR@10.
#
# Measured (2026-11-22, 2 cores, load ~3, 106 s end to end): BM25 MRR@10 0.651, nDCG@10 0.638
# on the 200 held-out test queries; TK after 200 steps of 32: MRR@10 0.853, nDCG@10 0.792.
#
# Knobs (environment): SIZE (small), STEPS (200), BATCH (32), DEPTH (50), DIM (64), THREADS (1),
# SEED (42).
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
PLUMB="${PLUMB:-$root/build/plumb}"
WORK="${1:-${TMPDIR:-/tmp}/plumb-train-tk}"
SIZE="${SIZE:-small}"
STEPS="${STEPS:-200}"
BATCH="${BATCH:-32}"
DEPTH="${DEPTH:-50}"
DIM="${DIM:-64}"
THREADS="${THREADS:-1}"
SEED="${SEED:-42}"

[ -x "$PLUMB" ] || { echo "run.sh: $PLUMB not found (build first or set PLUMB)" >&2; exit 2; }
mkdir -p "$WORK"
cd "$WORK"
start=$(date +%s)

echo "== generate ($SIZE planted corpus), index, BM25"
rm -rf data
"$PLUMB" generate --planted --size "$SIZE" --seed "$SEED" --output data --quiet
"$PLUMB" index --corpus data/corpus.tsv --index idx --threads 2 --quiet
for split in dev test; do
  "$PLUMB" search --index idx --topics "data/topics.$split.tsv" --output "bm25.$split.run" \
      --k 1000 --threads 2 --tag bm25 --quiet
done

echo "== word vectors ($DIM-d) and tk-init"
cut -f2- data/corpus.tsv data/topics.tsv | tr 'A-Z' 'a-z' | tr -cs 'a-z0-9' '\n' |
  LC_ALL=C sort -u |
  awk -v d="$DIM" -v s="$SEED" 'BEGIN { srand(s) }
       NF { printf "%s", $1; for (i = 0; i < d; i++) printf " %.4f", (rand() - 0.5) * 3; printf "\n" }' \
  > vectors.txt
rm -rf tk-init tk
"$PLUMB" tk-init --embeddings vectors.txt --output tk-init --layers 1 --heads 4 \
    --head-dim "$((DIM / 4))" --ff-dim "$DIM" --max-passage-length 128 --freeze-embeddings \
    --seed "$SEED" --quiet

echo "== train TK: $STEPS steps of $BATCH triples, validated on the dev queries"
"$PLUMB" train --model tk --init tk-init --output tk --triples data/triples.train.tsv \
    --steps "$STEPS" --batch "$BATCH" --seed "$SEED" --threads "$THREADS" \
    --lr-group contextualizer=1e-3 --lr-group kernels=1e-2 \
    --val-topics data/topics.dev.tsv --val-qrels data/qrels.dev.txt --val-run bm25.dev.run \
    --index idx --val-depth "$DEPTH" --validate-every "$((STEPS / 4))" --select-metric mrr \
    --no-tune --quiet

echo "== re-rank the held-out test queries' BM25 top $DEPTH"
"$PLUMB" rerank --index idx --topics data/topics.test.tsv --run bm25.test.run --model tk/best \
    --type tk --depth "$DEPTH" --threads "$THREADS" --output tk.test.run --quiet

mrr() { "$PLUMB" eval -m mrr_cut.10 data/qrels.test.txt "$1" | awk '$1 == "mrr_cut_10" { print $3 }'; }
ndcg() { "$PLUMB" eval -m ndcg_cut.10 data/qrels.test.txt "$1" | awk '$1 == "ndcg_cut_10" { print $3 }'; }
bm25_mrr=$(mrr bm25.test.run); tk_mrr=$(mrr tk.test.run)
bm25_ndcg=$(ndcg bm25.test.run); tk_ndcg=$(ndcg tk.test.run)
echo
printf '%-6s %8s %8s   (%s held-out queries, %ss)\n' run MRR@10 nDCG@10 \
    "$(wc -l < data/topics.test.tsv)" "$(($(date +%s) - start))"
printf '%-6s %8s %8s\n' BM25 "$bm25_mrr" "$bm25_ndcg" TK "$tk_mrr" "$tk_ndcg"
if awk -v a="$tk_mrr" -v b="$bm25_mrr" 'BEGIN { exit !(a > b) }'; then
  echo "TK beats BM25 on MRR@10"
else
  echo "TK does NOT beat BM25 on MRR@10" >&2
  exit 1
fi
