// CLI tests of the collection formats through the `plumb` binary: TREC SGML folders with TREC
// topics (--topic-field), an HTML tarball, a BEIR folder evaluated with its qrels TSV, and
// --skip-bad on a file of the wrong format. Expected rankings follow from the documents' words
// (each query matches exactly one document), not from plumb's output.
#include <gtest/gtest.h>

#include <sstream>

#include "bm25_test_util.hpp"
#include "tests/support/corpus_files.hpp"
#include "tests/support/tar_files.hpp"

using plumb::test::write_gz;
using plumb_test::slurp;
using plumb_test::TempDir;
using plumb_test::write_file;
namespace fs = std::filesystem;

namespace {
int run(const std::string& args, const fs::path& log) {
    std::string cmd = std::string(PLUMB_CLI_PATH) + " " + args + " >" + log.string() + " 2>&1";
    int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/// First result (docid) per query of a TREC run, in file order.
std::vector<std::pair<std::string, std::string>> top1(const fs::path& run_file) {
    std::vector<std::pair<std::string, std::string>> out;
    std::istringstream in(slurp(run_file));
    std::string qid, q0, docid, rank, score, tag;
    while (in >> qid >> q0 >> docid >> rank >> score >> tag) {
        if (rank == "1") out.emplace_back(qid, docid);
    }
    return out;
}

}  // namespace

TEST(CollectionsCli, TrecFolderAndTrecTopics) {
    TempDir dir("trec_cli");
    fs::create_directories(dir / "disk/fbis");
    // Words outside the kept elements (BYLINE, DOCID) must not be indexed: "zebra" only occurs
    // there, so a query for it finds nothing.
    write_file(dir / "disk/fbis/fb1",
               "<DOC>\n<DOCNO> FBIS3-1 </DOCNO>\n<BYLINE>zebra</BYLINE>\n<HEADLINE>\nvolcano "
               "eruption\n</HEADLINE>\n<TEXT>\nlava flows near the village\n</TEXT>\n</DOC>\n"
               "<DOC>\n<DOCNO> FBIS3-2 </DOCNO>\n<TEXT>\nparliament election results\n</TEXT>\n"
               "</DOC>\n");
    write_gz(dir / "disk/fbis/fb2.gz",
             "<DOC>\n<DOCNO> FBIS3-3 </DOCNO>\n<TEXT>\ncentral bank interest rates\n</TEXT>\n"
             "</DOC>\n");
    write_file(dir / "disk/readme", "about this disk\n");
    write_file(dir / "topics.txt",
               "<top>\n<num> Number: 401\n<title> volcano\n\n<desc> Description:\nbank "
               "rates\n\n<narr> Narrative:\nanything\n</top>\n\n<top>\n<num> Number: 402\n"
               "<title> zebra\n<desc> Description:\nelection\n<narr> Narrative:\nx\n</top>\n");
    auto log = dir / "log.txt";
    ASSERT_EQ(run("index --corpus " + (dir / "disk").string() + " --index " +
                      (dir / "idx").string() + " --quiet",
                  log),
              0)
        << slurp(log);
    EXPECT_NE(slurp(log).find("indexed 3 documents"), std::string::npos) << slurp(log);
    ASSERT_EQ(
        run("search --index " + (dir / "idx").string() + " --topics " +
                (dir / "topics.txt").string() + " --output " + (dir / "t.run").string() + " --quiet",
            log),
        0)
        << slurp(log);
    // Titles: 401 "volcano" -> FBIS3-1 (HEADLINE); 402 "zebra" only in a dropped BYLINE.
    EXPECT_EQ(top1(dir / "t.run"),
              (std::vector<std::pair<std::string, std::string>>{{"401", "FBIS3-1"}}));
    ASSERT_EQ(run("search --index " + (dir / "idx").string() + " --topics " +
                      (dir / "topics.txt").string() + " --topic-field description --output " +
                      (dir / "d.run").string() + " --quiet",
                  log),
              0)
        << slurp(log);
    EXPECT_EQ(top1(dir / "d.run"), (std::vector<std::pair<std::string, std::string>>{
                                       {"401", "FBIS3-3"}, {"402", "FBIS3-2"}}));
    // The same query fields through a configured pipeline (BM25 only), both entry points
    // (configured pipelines live in the CLI's Torch module: not in a PLUMB_WITH_TORCH=OFF tree).
    if (PLUMB_TEST_WITH_TORCH) {
        write_file(dir / "p.json", R"({"first_stage": {"type": "bm25", "index": "idx"}})");
        ASSERT_EQ(run("pipeline --config " + (dir / "p.json").string() + " --topics " +
                          (dir / "topics.txt").string() + " --topic-field description --output " +
                          (dir / "p.run").string() + " --quiet",
                      log),
                  0)
            << slurp(log);
        EXPECT_EQ(top1(dir / "p.run"), top1(dir / "d.run"));
        ASSERT_EQ(run("search --pipeline " + (dir / "p.json").string() + " --topics " +
                          (dir / "topics.txt").string() + " --topic-field desc --output " +
                          (dir / "s.run").string() + " --quiet",
                      log),
                  0)
            << slurp(log);
        EXPECT_EQ(top1(dir / "s.run"), top1(dir / "d.run"));
    }
    EXPECT_EQ(run("search --index " + (dir / "idx").string() + " --topics " +
                      (dir / "topics.txt").string() + " --topic-field summary --output " +
                      (dir / "x.run").string() + " --quiet",
                  log),
              1);
    EXPECT_NE(slurp(log).find("unknown topic field 'summary'"), std::string::npos) << slurp(log);

    // A malformed document is an error naming file and line, also with --input-format trec.
    write_file(dir / "bad.sgml",
               "<DOC>\n<DOCNO>a</DOCNO>\n<TEXT>x</TEXT>\n<DOCNO>b</DOCNO>\n"
               "</DOC>\n");
    EXPECT_EQ(run("index --corpus " + (dir / "bad.sgml").string() + " --input-format trec --index " +
                      (dir / "idx2").string() + " --quiet",
                  log),
              1);
    EXPECT_NE(slurp(log).find("bad.sgml:4: second <DOCNO> in one <DOC> (first on line 2)"),
              std::string::npos)
        << slurp(log);
    EXPECT_FALSE(fs::exists(dir / "idx2"));
}

TEST(CollectionsCli, HtmlTarball) {
    TempDir dir("html_cli");
    plumb::test::write_tar(
        dir / "cacm.tar.gz",
        {{"cacm/CACM-0001.html",
          "<html>\n<pre>\nPreliminary Report &amp; Algebraic "
          "Language\n</pre>\n</html>\n"},
         {"cacm/CACM-0002.html", "<html>\n<pre>\nExtraction of Roots\n</pre>\n</html>\n"},
         {"cacm/CACM-0003.html", "<html><pre>Techniques for Coding</pre></html>"}},
        /*gzip=*/true);
    write_file(dir / "q.tsv", "1\troots extraction\n2\talgebraic\n3\tamp\n");
    auto log = dir / "log.txt";
    ASSERT_EQ(run("index --corpus " + (dir / "cacm.tar.gz").string() + " --index " +
                      (dir / "idx").string() + " --quiet",
                  log),
              0)
        << slurp(log);
    EXPECT_NE(slurp(log).find("indexed 3 documents"), std::string::npos) << slurp(log);
    ASSERT_EQ(run("search --index " + (dir / "idx").string() + " --topics " +
                      (dir / "q.tsv").string() + " --output " + (dir / "r.run").string() + " --quiet",
                  log),
              0)
        << slurp(log);
    // "amp" is an entity, decoded to "&": no document holds the word.
    EXPECT_EQ(top1(dir / "r.run"), (std::vector<std::pair<std::string, std::string>>{
                                       {"1", "CACM-0002"}, {"2", "CACM-0001"}}));
}

TEST(CollectionsCli, BeirFolderWithQrelsTsv) {
    TempDir dir("beir_cli");
    fs::create_directories(dir / "nfcorpus/qrels");
    write_file(dir / "nfcorpus/corpus.jsonl",
               "{\"_id\": \"MED-10\", \"title\": \"Statin use\", \"text\": \"breast cancer "
               "survival\", \"metadata\": {}}\n{\"_id\": \"MED-14\", \"title\": \"Vitamin D\", "
               "\"text\": \"bone density\"}\n{\"_id\": \"MED-20\", \"title\": \"\", \"text\": "
               "\"coffee and sleep\"}\n");
    write_file(dir / "nfcorpus/queries.jsonl",
               "{\"_id\": \"PLAIN-1\", \"text\": \"statin\"}\n{\"_id\": \"PLAIN-2\", \"text\": "
               "\"vitamin bone\"}\n");
    write_file(dir / "nfcorpus/qrels/test.tsv",
               "query-id\tcorpus-id\tscore\nPLAIN-1\tMED-10\t2\nPLAIN-2\tMED-20\t1\n");
    auto log = dir / "log.txt";
    ASSERT_EQ(run("index --corpus " + (dir / "nfcorpus").string() + " --index " +
                      (dir / "idx").string() + " --quiet",
                  log),
              0)
        << slurp(log);
    EXPECT_NE(slurp(log).find("indexed 3 documents"), std::string::npos) << slurp(log);
    ASSERT_EQ(run("search --index " + (dir / "idx").string() + " --topics " +
                      (dir / "nfcorpus/queries.jsonl").string() + " --output " +
                      (dir / "r.run").string() + " --quiet",
                  log),
              0)
        << slurp(log);
    // The title is indexed with the text: "statin" is only in MED-10's title.
    EXPECT_EQ(top1(dir / "r.run"), (std::vector<std::pair<std::string, std::string>>{
                                       {"PLAIN-1", "MED-10"}, {"PLAIN-2", "MED-14"}}));
    // P@1: PLAIN-1's top document is relevant, PLAIN-2's (MED-14) is not: mean 0.5.
    ASSERT_EQ(run("eval -m P.1 " + (dir / "nfcorpus/qrels/test.tsv").string() + " " +
                      (dir / "r.run").string(),
                  log),
              0)
        << slurp(log);
    std::istringstream in(slurp(log));
    std::string measure, all, value;
    ASSERT_TRUE(in >> measure >> all >> value) << slurp(log);
    EXPECT_EQ(measure, "P_1");
    EXPECT_EQ(all, "all");
    EXPECT_EQ(value, "0.5000");
}

TEST(CollectionsCli, SkipBadOnTheWrongFormatIsAnError) {
    TempDir dir("wrong_cli");
    write_file(dir / "corpus.tsv",
               "{\"_id\": \"1\", \"text\": \"a\"}\n{\"_id\": \"2\", \"text\": "
               "\"b\"}\n");
    auto log = dir / "log.txt";
    EXPECT_EQ(run("index --corpus " + (dir / "corpus.tsv").string() + " --skip-bad --index " +
                      (dir / "idx").string() + " --quiet",
                  log),
              1);
    EXPECT_NE(slurp(log).find("corpus.tsv:1: expected MS MARCO TSV (id<TAB>text) but the file "
                              "looks like JSONL: no record parsed"),
              std::string::npos)
        << slurp(log);
    EXPECT_FALSE(fs::exists(dir / "idx"));
    // --max-bad-share: 1 bad line of 4 (25 %) passes with 0.3, fails with the default.
    write_file(dir / "c.tsv", "1\ta\n2\tb\nbroken\n3\tc\n");
    EXPECT_EQ(run("index --corpus " + (dir / "c.tsv").string() + " --skip-bad --index " +
                      (dir / "idx").string() + " --quiet",
                  log),
              1);
    EXPECT_NE(slurp(log).find("1 of 4 records are bad"), std::string::npos) << slurp(log);
    EXPECT_EQ(run("index --corpus " + (dir / "c.tsv").string() +
                      " --skip-bad --max-bad-share 0.3 --index " + (dir / "idx").string() + " --quiet",
                  log),
              0)
        << slurp(log);
    EXPECT_NE(slurp(log).find("indexed 3 documents"), std::string::npos) << slurp(log);
}
