#!/usr/bin/env bash
# Installs plumb from the build tree into a temporary prefix, builds examples/host against the
# installed package only (find_package(plumb)), and runs it.
set -euo pipefail
build_dir="$1"; source_dir="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$source_dir/examples/host" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$work/prefix" "${launcher[@]}" >/dev/null
cmake --build "$work/build" -j 2 >/dev/null
"$work/build/plumb_host" "$work/data"

# examples/pipeline_host: a JSON-configured BM25 pipeline over a tiny index made with the
# installed CLI.
cmake -S "$source_dir/examples/pipeline_host" -B "$work/build-ph" -G Ninja \
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" "${launcher[@]}" >/dev/null
cmake --build "$work/build-ph" -j 2 >/dev/null
mkdir -p "$work/ph"
printf 'p1\tthe quick brown fox\np2\ta lazy dog sleeps\np3\tthe fox and the dog\n' \
    > "$work/ph/corpus.tsv"
"$work/prefix/bin/plumb" index --quiet --corpus "$work/ph/corpus.tsv" --index "$work/ph/idx"
printf '{"first_stage": {"type": "bm25", "index": "idx"}, "k": 2}\n' > "$work/ph/pipeline.json"
out="$("$work/build-ph/plumb_pipeline_host" "$work/ph/pipeline.json" "fox")"
echo "$out"
# "fox" occurs once in p1 (3 terms after stop words) and p3 (2 terms): the shorter p3 first.
grep -q '^1 p3 ' <<<"$out"
grep -q '^2 p1 ' <<<"$out"
if grep -q '^3 ' <<<"$out"; then exit 1; fi
# examples/custom_stage: README's worked example, a host-defined post-filter registered with one
# line. "fox" in four passages of two sites; per_site_cap max 2 keeps the best two of site a
# (BM25 order: the shorter passages first) and site b's one.
cmake -S "$source_dir/examples/custom_stage" -B "$work/build-cs" -G Ninja \
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" "${launcher[@]}" >/dev/null
cmake --build "$work/build-cs" -j 2 >/dev/null
mkdir -p "$work/cs"
printf 'a/1\tfox\na/2\tfox jumps\na/3\tfox jumps high\nb/1\tfox runs over there\nc/1\tdog\n' \
    > "$work/cs/corpus.tsv"
"$work/prefix/bin/plumb" index --quiet --corpus "$work/cs/corpus.tsv" --index "$work/cs/idx"
printf '{"first_stage": {"type": "bm25", "index": "idx"}, "k": 10,
         "post_filters": [{"type": "per_site_cap", "max": 2}]}\n' > "$work/cs/pipeline.json"
cs="$("$work/build-cs/plumb_custom_stage" "$work/cs/pipeline.json" "fox")"
echo "$cs"
test "$(cut -d' ' -f1,2 <<<"$cs" | tr '\n' ' ')" = "1 a/1 2 a/2 3 b/1 "
# Its factory rejects an unknown key like the built-in ones.
printf '{"first_stage": {"type": "bm25", "index": "idx"},
         "post_filters": [{"type": "per_site_cap", "maxx": 2}]}\n' > "$work/cs/bad.json"
if "$work/build-cs/plumb_custom_stage" "$work/cs/bad.json" "fox" 2> "$work/cs/err.txt"; then
    exit 1
fi
grep -q 'per_site_cap.*unknown key "maxx"' "$work/cs/err.txt"
# The installed `plumb` loads its LibTorch command module from <prefix>/<libdir>/plumb: a
# configured pipeline through `plumb search --pipeline` (core command -> module hook).
printf 'q1\tfox\n' > "$work/ph/topics.tsv"
"$work/prefix/bin/plumb" search --quiet --pipeline "$work/ph/pipeline.json" \
    --topics "$work/ph/topics.tsv" --output "$work/ph/run.txt"
grep -q '^q1 Q0 p3 1 ' "$work/ph/run.txt"
"$work/prefix/bin/plumb" --help > "$work/help.txt"
grep -q '^  rerank ' "$work/help.txt"
# examples/eval_host: find_package(plumb COMPONENTS eval) alone; it must not look for LibTorch,
# FAISS or Lucene++. q1 ranks b(0) c(1) a(2): AP = (1/2 + 2/3) / 2 = 0.5833; nDCG@10 =
# (1/log2 3 + 2/2) / (2 + 1/log2 3) = 0.6199; RR = 1/2.
cmake -S "$source_dir/examples/eval_host" -B "$work/build-eh" -G Ninja \
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" "${launcher[@]}" >/dev/null
if grep -E '^(Torch_DIR|faiss_DIR|liblucene\+\+_DIR):' "$work/build-eh/CMakeCache.txt"; then
    echo "the eval component looked for LibTorch, FAISS or Lucene++" >&2
    exit 1
fi
cmake --build "$work/build-eh" -j 2 >/dev/null
eh="$("$work/build-eh/plumb_eval_host")"
echo "$eh"
grep -qx 'map 0.5833' <<<"$eh"
grep -qx 'nDCG@10 0.6199' <<<"$eh"
grep -qx 'RR 0.5000' <<<"$eh"
# Internal headers are not installed.
for internal in eval/detail_parse.hpp builtins/builtins.hpp; do
    if test -e "$work/prefix/include/plumb/$internal"; then
        echo "installed an internal or misplaced header: $internal" >&2
        exit 1
    fi
done
test -e "$work/prefix/include/plumb/plugin/builtins/builtins.hpp"
# The pkg-config file of the evaluator builds the same host without CMake.
if command -v pkg-config >/dev/null; then
    export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib/x86_64-linux-gnu/pkgconfig"
    c++ -O1 -o "$work/eval_host_pc" "$source_dir/examples/eval_host/main.cpp" \
        $(pkg-config --cflags --libs plumb-eval)
    # (a shared-library build: pkg-config gives no RUNPATH, the loader is told where they are)
    pc="$(LD_LIBRARY_PATH="$(pkg-config --variable=libdir plumb-eval)" "$work/eval_host_pc")"
    grep -qx 'nDCG@10 0.6199' <<<"$pc"
fi
