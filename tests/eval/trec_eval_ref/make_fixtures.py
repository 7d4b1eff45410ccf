#!/usr/bin/env python3
"""Regenerates the expected outputs of plumb's trec_eval conformance test.

Runs the official trec_eval (built from the usnistgov/trec_eval repository: `make`) on every
case and writes expected/<case>.out.gz (gzip: trec_eval's stdout) plus cases.tsv (case name,
expected file, then the arguments `plumb eval` gets, relative to this folder; cases whose
trec_eval output is identical, such as one run's lines in three orders, share one file). Not
run by the test suite: the expected files are committed.

Usage: make_fixtures.py /path/to/trec_eval [/path/to/trec_eval/test]
The second argument (trec_eval's own test folder) refreshes testdata/*.gz, gzip copies of the
inputs of trec_eval's `make quicktest`.
"""
import gzip
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "expected"
RANDOM = HERE / "random"
TESTDATA = HERE / "testdata"


def trec_eval(binary, args):
    out = subprocess.run([binary] + args, cwd=HERE, check=True, capture_output=True)
    return out.stdout.decode()


def filtered_qrels(qrels: Path, run: Path, dest: Path):
    """The qrels restricted to the run's queries: what trec_eval 9.0.x evaluates without -c
    (trec_eval 10 stops on a qrels query without results instead; plumb follows 9.0.x)."""
    qids = set()
    for line in run.read_text().splitlines():
        f = line.split()
        if f:
            qids.add(f[0])
    keep = [l for l in qrels.read_text().splitlines() if l.split() and l.split()[0] in qids]
    dest.write_text("\n".join(keep) + "\n")


def main():
    binary = str(Path(sys.argv[1]).resolve())
    if len(sys.argv) > 2:
        TESTDATA.mkdir(exist_ok=True)
        for name in ["qrels.test", "qrels.test.with-comments", "results.test", "results.trunc",
                     "qrels.rel_level"]:
            with open(Path(sys.argv[2]) / name, "rb") as src, \
                    gzip.GzipFile(TESTDATA / (name + ".gz"), "wb", mtime=0) as dst:
                shutil.copyfileobj(src, dst)
    tmp = HERE / "tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    # trec_eval reads the plain files under tmp/; the test reads gzip copies in random/.
    subprocess.run([sys.executable, str(HERE / "make_inputs.py"), str(tmp / "random")],
                   check=True)
    shutil.rmtree(RANDOM, ignore_errors=True)
    RANDOM.mkdir()
    for f in sorted((tmp / "random").iterdir()):
        with open(f, "rb") as src, gzip.GzipFile(RANDOM / (f.name + ".gz"), "wb", mtime=0) as dst:
            shutil.copyfileobj(src, dst)
    shutil.rmtree(EXPECTED, ignore_errors=True)
    EXPECTED.mkdir()
    cases = []

    def unzip(p):
        dest = tmp / Path(p).name.replace(".gz", "")
        with gzip.open(HERE / p, "rb") as src, open(dest, "wb") as dst:
            shutil.copyfileobj(src, dst)
        return str(dest.relative_to(HERE))

    written = {}  # expected text -> file, so that layouts of the same lines share one file

    def plain(args):
        return [("tmp/" + a) if a.startswith("random/") else a for a in args]

    def gz(args):
        return [(a + ".gz") if a.startswith("random/") else a for a in args]

    def case(name, plumb_args, te_args=None, renames=()):
        text = trec_eval(binary, plain(te_args if te_args is not None else plumb_args))
        for old, new in renames:
            text = "".join(
                (new.ljust(22) + l[22:] if l.split("\t")[0].rstrip() == old else l)
                for l in text.splitlines(keepends=True))
        if text not in written:
            written[text] = name + ".out.gz"
            with gzip.GzipFile(EXPECTED / written[text], "wb", mtime=0) as f:
                f.write(text.encode())
        cases.append("\t".join([name, written[text], " ".join(gz(plumb_args))]))

    # trec_eval's `make quicktest` (the lines over qrels/trec_results).
    q, r, t = "testdata/qrels.test.gz", "testdata/results.test.gz", "testdata/results.trunc.gz"
    qc, ql = "testdata/qrels.test.with-comments.gz", "testdata/qrels.rel_level.gz"
    uq, ur, ut, uqc, uql = unzip(q), unzip(r), unzip(t), unzip(qc), unzip(ql)
    case("quick_default", [q, r], [uq, ur])
    case("quick_with_comments", [qc, r], [uqc, ur])
    case("quick_all_trec", ["-m", "all_trec", q, r], ["-m", "all_trec", uq, ur])
    case("quick_all_trec_q", ["-m", "all_trec", "-q", q, r], ["-m", "all_trec", "-q", uq, ur])
    case("quick_aqc", ["-m", "all_trec", "-q", "-c", q, t], ["-m", "all_trec", "-q", "-c", uq, ut])
    case("quick_aqcM", ["-m", "all_trec", "-q", "-c", "-M100", q, t],
         ["-m", "all_trec", "-q", "-c", "-M100", uq, ut])
    case("quick_aql", ["-m", "all_trec", "-mrelstring.20", "-q", "-l2", ql, r],
         ["-m", "all_trec", "-mrelstring.20", "-q", "-l2", uql, ur])
    params = ["-q", "-miprec_at_recall..10,.20,.25,.75,.50", "-m", "P.5,7,3", "-m", "recall.20,2000",
              "-m", "Rprec_mult.5.0,0.2,0.35", "-mutility.2,-1,0,0", "-m", "11pt_avg..25,.5,.75",
              "-mndcg.1=3,2=9,4=4.5", "-mndcg_cut.10,20,23.4", "-msuccess.2,5,20"]
    case("quick_meas_params", params + [q, r], params + [uq, ur])

    # Randomized sets: every layout of the same lines must give trec_eval's output.
    # ndcg, dcg and ideal_dcg share one parameter block in trec_eval (m_ndcg.c): asking for two
    # of them with parameters crashes it (double free), so each has a case of its own.
    gains = ["-m", "ndcg.1=3,2=9,4=4.5", "-m", "G.1=0.5,3=3", "-m", "Rndcg.2=1,3=10",
             "-m", "ndcg_rel.0=1", "-m", "rbp.p=0.8", "-m", "rbp_resid.p=0.5", "-m", "unj.1,3"]
    for s in ["binary", "graded", "wide"]:
        qrels = "random/%s.qrels" % s
        for layout in ["grouped", "reversed", "interleaved"]:
            run = "random/%s.%s.run" % (s, layout)
            n = "%s_%s" % (s, layout)
            case(n + "_qc", ["-q", "-c", qrels, run])
            case(n + "_all_trec_qc", ["-m", "all_trec", "-q", "-c", qrels, run])
            case(n + "_all_trec_qcJ", ["-m", "all_trec", "-q", "-c", "-J", qrels, run])
            case(n + "_qcM10", ["-q", "-c", "-M", "10", "-m", "all_trec", qrels, run])
            case(n + "_gains_qc", ["-q", "-c"] + gains + [qrels, run])
            case(n + "_dcg_qc", ["-q", "-c", "-m", "dcg.1=2,p=3,3=0.5", qrels, run])
            case(n + "_ideal_dcg_qc", ["-q", "-c", "-m", "ideal_dcg.0=1,2=5", qrels, run])
            case(n + "_dcg_default_qc", ["-q", "-c", "-m", "dcg", "-m", "ideal_dcg", qrels, run])
            # rbp alone: after another gain measure, trec_eval's rbp reads uninitialised
            # min/max (m_rbp.c) and its value depends on that measure's leftovers.
            case(n + "_rbp_default_qc", ["-q", "-c", "-m", "rbp", "-m", "rbp_resid", qrels, run])
            if s != "binary":
                case(n + "_qcl2", ["-q", "-c", "-l", "2", "-m", "all_trec", qrels, run])
            fq = tmp / ("%s.%s.filtered.qrels" % (s, layout))
            filtered_qrels(HERE / plain([qrels])[0], HERE / plain([run])[0], fq)
            case(n + "_q", ["-q", qrels, run], ["-q", str(fq.relative_to(HERE)), run])
            case(n + "_all_trec_q", ["-m", "all_trec", "-q", qrels, run],
                 ["-m", "all_trec", "-q", str(fq.relative_to(HERE)), run])
        ms = ["-q", "-c", "-m", "map", "-m", "recip_rank", "-m", "P.5,10", "-m", "ndcg_cut.10"]
        case(s + "_msmarco_qc", ms + [qrels, "random/%s.msmarco.run" % s],
             ms + [qrels, "random/%s.grouped.run" % s])
        ir = ["-q", "-c", "-m", "AP", "-m", "P@5", "-m", "R@1000", "-m", "nDCG@10", "-m", "AP@100"]
        te = ["-q", "-c", "-m", "map", "-m", "P.5", "-m", "recall.1000", "-m", "ndcg_cut.10",
              "-m", "map_cut.100"]
        case(s + "_ir_measures_qc", ir + [qrels, "random/%s.interleaved.run" % s],
             te + [qrels, "random/%s.interleaved.run" % s],
             [("map", "AP"), ("P_5", "P@5"), ("recall_1000", "R@1000"), ("ndcg_cut_10", "nDCG@10"),
              ("map_cut_100", "AP@100")])
    (HERE / "cases.tsv").write_text("\n".join(cases) + "\n")
    shutil.rmtree(tmp)
    version = subprocess.run([binary, "-v"], capture_output=True).stderr.decode().strip()
    print("wrote %d cases with %s" % (len(cases), version or "trec_eval"))


if __name__ == "__main__":
    main()
