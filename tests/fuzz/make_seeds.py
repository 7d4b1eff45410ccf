#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets: <out>/<target>/<seed>, small valid and
slightly odd inputs per format (BOM, CRLF, CR-only, empty fields, Unicode, gzip).

    make_seeds.py <out dir>

Targets whose first input byte is a selector (options, format, file extension; see the
fuzz_<target>.cpp) get it prepended here. PyTorch checkpoints are written with python3-torch
when it is installed (scripts/setup installs it), else that corpus holds only a hand-made zip.
"""
import gzip
import io
import json
import os
import shutil
import struct
import sys
import zipfile

BOM = "\ufeff"


def put(out, target, name, data, selector=None):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    if selector is not None:
        data = bytes([selector]) + data
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def gz(text):
    return gzip.compress(text.encode("utf-8"), mtime=0)


def line_reader(out):
    t = "line_reader"
    put(out, t, "lf", "a\tb\nc d\n\nlast", 0)
    put(out, t, "crlf_bom", BOM + "a\r\nb\r\n\r\n", 0)
    put(out, t, "cr_only", "a\rb\rc\r", 0)
    put(out, t, "mixed", "a\r\nb\nc\rd\n", 3)
    put(out, t, "utf8", "h\u00e9llo w\u00f6rld \u6771\u4eac \U0001F600\n\xff\n".encode("utf-8", "surrogateescape"), 0)
    put(out, t, "invalid_utf8", b"ok\n\xc0\xaf\n\xed\xa0\x80\n\xf4\x90\x80\x80\n", 0)
    put(out, t, "gzip", gz("one\ntwo\r\nthree\n"), 0)
    put(out, t, "binary_after_header", b"2 3\nthe " + struct.pack("<3f", 1, 2, 3) + b"\nof " + struct.pack("<3f", 4, 5, 6) + b"\n", 1)


def qrels(out):
    t = "qrels"
    put(out, t, "trec", "1 0 d1 1\n1 0 d2 0\n2 0 d3 2\n2 0 d4 -1\n")
    put(out, t, "beir_header", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t2\n")
    put(out, t, "beir_no_header", "q1\td1\t1\r\nq2\td9\t0\r\n")
    put(out, t, "comments_bom", BOM + "# judged\n\n301 0 FBIS3-10082 1\n301 0 FBIS3-10169 0\n")
    put(out, t, "gzip", gz("1 0 a 1\n1 0 b 3\n"))
    put(out, t, "duplicate", "1 0 d1 1\n1 0 d1 2\n")
    put(out, t, "big_grade", "1 0 d1 99999\n1 0 d2 2147483648\n")


def run(out):
    t = "run"
    put(out, t, "trec", "1 Q0 d1 1 12.5 tag\n1 Q0 d2 2 11 tag\n2 Q0 d3 1 -0.5 tag extra\n")
    put(out, t, "scattered", "2 Q0 a 1 1 r\n1 Q0 b 1 1 r\n2 Q0 c 2 0.5 r\n")
    put(out, t, "msmarco", "1\td1\t1\n1\td2\t2\n2\td3\t1\n")
    put(out, t, "crlf_bom", BOM + "# c\r\n1 Q0 d1 1 1e3 t\r\n\r\n")
    put(out, t, "odd_scores", "1 Q0 a 1 nan t\n1 Q0 b 2 inf t\n1 Q0 c 3 1e999 t\n")
    put(out, t, "gzip", gz("1 Q0 d1 1 1 t\n"))


def corpus(out):
    t = "corpus_tsv"
    put(out, t, "plain", "d1\thello world\nd2\t\nd3\tx  y\n", 0)
    put(out, t, "crlf_bom", BOM + "0\tThe presence of communication\r\n1\tsecond\r\n", 0)
    put(out, t, "tabs", "d1\ta\tb\nd2\tc\n", 2)
    put(out, t, "bad_skip", "d1\tok\nno tab\n\tempty id\nd 2\tspace in id\n", 1 | 4)
    put(out, t, "unicode", "\u00e9\t\u6771\u4eac \U0001F600\nd2\t\xff\n".encode("utf-8", "surrogateescape"), 1)
    put(out, t, "gzip", gz("d1\tzipped text\n"), 0)

    t = "corpus_jsonl"
    put(out, t, "beir", '{"_id": "d1", "title": "T", "text": "hello"}\n{"_id": 2, "title": null, "text": "x", "metadata": {}}\n', 0)
    put(out, t, "pyserini", '{"id": "a", "contents": "b"}\r\n\r\n{"id": "c", "contents": ""}\r\n', 0)
    put(out, t, "escapes", BOM + '{"_id": "u", "text": "\\u00e9\\ud83d\\ude00\\n\\t\\"q\\""}\n', 0)
    put(out, t, "bad", '{"_id": "a"}\n{"text": "b"}\n[1, 2]\n{"_id": "c", "text": 3}\n{"_id": "d", "text": "ok"}\n', 1 | 4)
    put(out, t, "nested", '{"_id": "n", "text": "t", "metadata": {"a": [[[[{"b": 1e400}]]]]}}\n', 0)

    t = "trec_sgml"
    put(out, t, "basic", "<DOC>\n<DOCNO> d1 </DOCNO>\n<HEADLINE>Head</HEADLINE>\n<TEXT>\nSome <b>bold</b> &amp; text&nbsp;here.\n</TEXT>\n</DOC>\n", 0)
    put(out, t, "id_attr_crlf", '<DOC id="x1">\r\n<TEXT>a &#233; &#x4e2d;</TEXT>\r\n</DOC>\r\n', 0)
    put(out, t, "cr_only", "<doc>\r<docno>d2</docno>\r<text>lower case tags</text>\r</doc>\r", 0)
    put(out, t, "dropped", "<DOC><DOCNO>d3</DOCNO><DOCID>9</DOCID><BYLINE>b</BYLINE><TTL>t</TTL><LP>lp<TEXT>nested</TEXT></LP></DOC>\n", 0)
    put(out, t, "bad", "<DOC>\n<TEXT>no docno</TEXT>\n</DOC>\n<DOC><DOCNO>a</DOCNO><DOCNO>b</DOCNO></DOC>\ntext outside\n<DOC><DOCNO>ok</DOCNO></DOC>\n<DOC><DOCNO>u</DOCNO><TEXT>unterminated\n", 1 | 4)

    t = "html"
    put(out, t, "page", "<!DOCTYPE html><html><head><title>T</title><style>p{}</style><script>var a='<p>';</script></head>"
        "<body><p>a &amp; b &lt; c&nbsp;d &#8212; &#x1F600; &unknown;</p><!-- comment --><br/>x<pre>  y  </pre></body></html>", 8)
    put(out, t, "broken", "<p <b>unclosed <a href='x>y'>link</a> &#99999999; &#; <![CDATA[cdata]]> <?pi?> <", 8)
    put(out, t, "text_only", "just text, no markup\r\nsecond line", 0)


def topics(out):
    t = "topics"
    put(out, t, "tsv", "1\tquery one\n2\t\n3\t\u00e9t\u00e9\n", 0)
    put(out, t, "jsonl", '{"_id": "q1", "text": "what is"}\n{"_id": 2, "text": "int id", "metadata": {}}\n', 1)
    trec = ("<top>\n<num> Number: 301\n<title> International Organized Crime\n\n<desc> Description:\n"
            "Identify organizations.\n\n<narr> Narrative:\nA relevant document.\n</top>\n\n"
            "<top>\n<num> Number: 302 <title> Poliomyelitis <desc> Description: polio\n<narr> Narrative: n\n</top>\n")
    put(out, t, "trec_title", trec, 2)
    put(out, t, "trec_all_fields", trec, 2 | (6 << 3))
    put(out, t, "trec_cr_only", trec.replace("\n", "\r"), 3 | (1 << 3))
    put(out, t, "bad_skip", "1\tq\nno tab\n1\tdup\n2\tok\n", 4)
    put(out, t, "duplicate", '{"_id": "a", "text": "x"}\n{"_id": "a", "text": "y"}\n', 1)


def pipelines(out):
    t = "pipeline_json"
    put(out, t, "full", json.dumps({
        "description": "bm25 then tk", "first_stage": {"type": "bm25", "index": "idx", "k1": 0.9, "b": 0.4},
        "rerank": [{"type": "tk", "model": "tk_model", "depth": 100}],
        "post_filters": [{"type": "fair_topk", "p": 0.5, "alpha": 0.1, "k": 10}],
        "k": 10, "candidates": 1000, "return_text": False}, indent=2))
    put(out, t, "minimal", '{"first_stage": {"type": "bm25", "index": "idx"}}')
    put(out, t, "unknown", '{"first_stage": {"type": "bm26"}, "x": 1}')
    put(out, t, "plugins", '{"plugins": ["libnone.so"], "first_stage": {"type": "bm25", "index": "i"}}')
    put(out, t, "two_stages", '{"first_stage": {"type": "bm25", "index": "i"}, "rerank": [{"type": "tk", "depth": 5}, {"type": "tk", "name": "tk2", "depth": 0}], "k": 0}')
    put(out, t, "odd_values", '{"first_stage": {"type": "bm25", "index": "i", "threads": -1}, "k": 1e300, "candidates": 18446744073709551616}')

    t = "pipeline_yaml"
    put(out, t, "block", "# comment\ndescription: bm25 then tk\nfirst_stage:\n  type: bm25\n  index: idx\n"
        "rerank:\n  - type: tk\n    model: 'tk_model'\n    depth: 100\npost_filters: [{type: fair_topk, p: 0.5}]\nk: 10\nreturn_text: false\n")
    put(out, t, "flow", "{first_stage: {type: bm25, index: \"i\"}, k: 5, candidates: ~}")
    put(out, t, "anchors", "base: &b {type: bm25, index: i}\nfirst_stage: *b\nk: 0x10\n")
    put(out, t, "duplicate_key", "first_stage: {type: bm25, index: i}\nk: 1\nk: 2\n")
    put(out, t, "crlf_bom", BOM + "first_stage:\r\n  type: bm25\r\n  index: i\r\nk: 1e3\r\n")
    put(out, t, "multi_doc", "---\nfirst_stage: {type: bm25, index: i}\n...\n---\nk: 1\n")
    put(out, t, "tags", "first_stage: !!map {type: !!str bm25, index: !!binary aGVsbG8=}\nk: !!int 3\n")


def debias_inputs(out):
    t = "liwc"
    dic = "%\n1\tposemo\n2\tnegemo\n3\tsocial\n%\nhappy\t1\nsad*\t2\nabandon*\t2 3\nkind of\t1 2\nhe\t3\n"
    put(out, t, "basic", dic, 0)
    put(out, t, "crlf_bom", BOM + dic.replace("\n", "\r\n"), 0)
    put(out, t, "cr_only", dic.replace("\n", "\r"), 0)
    put(out, t, "liwc2015_conditional", "%\n1\tfunct\n2\tverb\n%\nlike\t02 134)125/464\nwell\t1\n", 1)
    put(out, t, "bad_lines", "%\n1\ta\n1\tdup\nx\tb\n%\nw\t9\nw2\nw*x\t1\nok\t1\n", 1)
    put(out, t, "unterminated", "%\n1\ta\n", 0)

    t = "word_lists"
    put(out, t, "gender_words", "he,m\nshe,f\n# c\n\n HIS , M \nh\u00e9r,f\r\n", 0)
    put(out, t, "gender_conflict", "he,m\nhe,f\n", 0)
    put(out, t, "qid_list", "1\n2 extra\n# c\n1\n\n", 1)
    put(out, t, "gendered_queries", "1\tf\n2\tm\n3\tn\n", 2)
    put(out, t, "bias_file", "# plumb-gender-bias variant=tc\nd1\t1\t2\t1\nd2\t0\t0\t0\n", 3)
    put(out, t, "bias_combined", "# plumb-gender-bias-combined v1\ndocid\ttc\ttc_female\ttc_male\ttf\ttf_female\ttf_male\tbool\tbool_female\tbool_male\tibbr_magnitude\tibbr_label\n"
        "d1\t1\t2\t1\t0.4\t1.1\t0.7\t0\t1\t1\t1\t1\n", 4)
    put(out, t, "bias_labels", "d1\t1\nd2\t-1\nd3\t0\n", 5)
    put(out, t, "category_vectors", "d1\t0.1\t0.2\nd2\t0\t1e-3\n", 6)
    put(out, t, "mats", '{"mats": 0.5, "other": [1, 2]}', 7)
    put(out, t, "query_attributes", "qid\tlength\ttype\n1\t3\tNUMERIC\n2\t5\tDESC\n", 8)
    put(out, t, "shown_ranks", "1\t1\td1\t0\n1\t2\td2\t1\n2\t1\td3\t0\n# c\n", 9)
    put(out, t, "debias_qrels", "1 0 d1 1\n1 0 d2 0\n", 10)
    put(out, t, "rotation_offsets", "d1\t2\t5\nd2\t1\t0\n", 11)
    put(out, t, "tsv_map", "a\tb\nc\td\n", 12)
    put(out, t, "generated_pairs", "q1\tquery\tf\tm\nq2\tother\tm\n", 12)

    t = "survivorship"
    rows = [{"query_id": 1, "query_type": "NUMERIC", "passages": [{"is_selected": 0, "passage_text": "a"}, {"is_selected": 1, "passage_text": "b"}]},
            {"query_id": "2", "query_type": "DESCRIPTION", "passages": [{"is_selected": True, "passage_text": "c", "url": "u"}]},
            {"query_id": 3, "passages": []}]
    put(out, t, "jsonl", "".join(json.dumps(r) + "\n" for r in rows), 0)
    put(out, t, "jsonl_crlf_bom", BOM + "".join(json.dumps(r) + "\r\n" for r in rows[:2]), 0)
    put(out, t, "jsonl_bad", '{"query_type": "X"}\n{"query_id": 1, "passages": {"a": 1}}\n', 0)
    cols = {"query_id": {"0": 1102432, "1": 2}, "query_type": {"0": "DESCRIPTION", "1": "NUMERIC"},
            "passages": {"0": [{"is_selected": 0, "passage_text": "p", "url": "u"}, {"is_selected": 1, "passage_text": "q"}],
                         "1": [{"is_selected": 0, "passage_text": "r"}]},
            "answers": {"0": ["x"], "1": []}}
    put(out, t, "json_columns", json.dumps(cols), 1)
    put(out, t, "json_broken", '{"query_id": {"0": 1', 1)
    put(out, t, "json_arrays", '{"query_id": [1, 2], "passages": {"zero": []}}', 1)

    t = "answer_positions"
    squad = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [
        {"context": "Paris is the capital of France. It is large.",
         "qas": [{"id": "q1", "question": "capital?", "answers": [{"text": "Paris", "answer_start": 0}]},
                 {"id": "q2", "question": "?", "answers": [{"text": "large", "answer_start": 38}]},
                 {"id": "q3", "question": "none", "answers": [], "is_impossible": True}]},
        {"context": "\u00e9t\u00e9  caf\u00e9\tend", "qas": [{"id": "q4", "answers": [{"text": "caf\u00e9", "answer_start": 5}]}]}]}]}
    put(out, t, "squad", json.dumps(squad), 9)
    put(out, t, "squad_rotated", json.dumps(squad), 16 | 3)
    put(out, t, "odd_offsets", '{"data": [{"paragraphs": [{"context": "a b", "qas": [{"id": "x", "answers": [{"text": "b", "answer_start": 99}, {"text": "a", "answer_start": -1}]}]}]}]}', 0)
    put(out, t, "bad_shape", '{"data": {"paragraphs": 1}}', 0)


def safetensors_file(tensors, metadata=None, pad=b""):
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata is not None:
        header["__metadata__"] = metadata
    h = json.dumps(header).encode() + pad
    return struct.pack("<Q", len(h)) + h + data


def rerank_inputs(out):
    t = "safetensors"
    put(out, t, "f32", safetensors_file({"w": ("F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4)), "b": ("F32", [2], struct.pack("<2f", 5, 6))}, {"format": "pt"}))
    put(out, t, "f16_bf16", safetensors_file({"h": ("F16", [3], struct.pack("<3e", 1, -2, 0.5)), "g": ("BF16", [1], b"\x80\x3f")}, pad=b"   "))
    put(out, t, "i64_scalar", safetensors_file({"ids": ("I64", [2], struct.pack("<2q", 1, -1)), "s": ("F32", [], struct.pack("<f", 7))}))
    put(out, t, "empty_tensor", safetensors_file({"e": ("F32", [0, 3], b"")}))
    put(out, t, "bad_offsets", struct.pack("<Q", 60) + b'{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,99]}}    ')
    put(out, t, "huge_header", struct.pack("<Q", 1 << 62) + b"{}")

    t = "pytorch_checkpoint"
    try:
        import torch  # python3-torch
        import collections
        sd = collections.OrderedDict()
        sd["w"] = torch.arange(6, dtype=torch.float32).reshape(2, 3)
        sd["t"] = sd["w"].t()  # a strided view of the same storage
        sd["h"] = torch.tensor([1.5, -2.0], dtype=torch.float16)
        sd["bf"] = torch.tensor([0.25], dtype=torch.bfloat16)
        sd["ids"] = torch.tensor([1, 2, 3], dtype=torch.int64)
        sd["scalar"] = torch.tensor(3.0, dtype=torch.float64)
        for name, obj in [("state_dict", sd), ("wrapped", {"state_dict": sd, "epoch": 3}),
                          ("param", {"p": torch.nn.Parameter(torch.ones(2))})]:
            buf = io.BytesIO()
            torch.save(obj, buf)
            put(out, t, name, buf.getvalue())
    except ImportError:
        print("make_seeds.py: python3-torch not installed, PyTorch checkpoint seeds are hand-made only",
              file=sys.stderr)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        # protocol 2 pickle of an empty collections.OrderedDict(): the smallest state dict
        z.writestr("archive/data.pkl", b"\x80\x02ccollections\nOrderedDict\nq\x00)Rq\x01.")
        z.writestr("archive/version", "3\n")
    put(out, t, "empty_ordered_dict", buf.getvalue())
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", b"\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00lsq\x01\x85q\x02Rq\x03.")
    put(out, t, "forbidden_global", buf.getvalue())

    t = "hf_config"
    put(out, t, "bert", json.dumps({"architectures": ["BertForSequenceClassification"], "model_type": "bert",
        "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 37,
        "hidden_act": "gelu", "max_position_embeddings": 64, "type_vocab_size": 2, "vocab_size": 99,
        "layer_norm_eps": 1e-12, "id2label": {"0": "LABEL_0", "1": "LABEL_1"}, "do_lower_case": True,
        "strip_accents": None, "model_max_length": 512}, indent=2))
    put(out, t, "distilbert", json.dumps({"model_type": "distilbert", "dim": 32, "n_layers": 1, "n_heads": 4,
        "hidden_dim": 64, "activation": "gelu", "vocab_size": 50, "max_position_embeddings": 16}))
    put(out, t, "inconsistent", '{"model_type": "bert", "hidden_size": 30, "num_attention_heads": 4, "num_labels": -1}')
    put(out, t, "wrong_types", '{"hidden_size": "32", "do_lower_case": "yes", "id2label": [1]}')

    t = "vocab"
    special = "[PAD]\n[unused0]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n"
    put(out, t, "bert", special + "hello\nworld\n##s\n##ing\nrun\nun\n##aff\n##able\n,\n!\n\u6771\n\u4eac\n")
    put(out, t, "crlf_bom", BOM + special.replace("\n", "\r\n") + "a\r\n")
    put(out, t, "missing_special", "a\nb\n")
    put(out, t, "duplicates_empty", special + "a\na\n\n \n")

    t = "embeddings"
    put(out, t, "glove", "the 0.1 0.2 0.3\nof -1 2e-3 4\nThe 1 1 1\n", 1)
    put(out, t, "word2vec_text", "3 2\nthe 0.1 0.2\nof 1 2\nand 3 4\n", 3)
    put(out, t, "fasttext", "2 3\n, 0 0 0 \nthe 1 2 3 \n", 3 | 8)
    put(out, t, "word2vec_binary", b"2 3\nthe " + struct.pack("<3f", 1, 2, 3) + b"\nof " + struct.pack("<3f", 4, 5, 6) + b"\n", 4)
    put(out, t, "auto_binary", b"2 2\nab " + struct.pack("<2f", 1, 2) + b"cd " + struct.pack("<2f", 3, 4), 0 | 16)
    put(out, t, "ragged", "a 1 2\nb 1\nc nan inf\n", 1 | 32)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_seeds.py <out dir>")
    out = sys.argv[1]
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    for f in (line_reader, qrels, run, corpus, topics, pipelines, debias_inputs, rerank_inputs):
        f(out)


if __name__ == "__main__":
    main()
