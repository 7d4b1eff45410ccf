#include "index/index_builder.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <unordered_map>

#include "index/detail/analysis_chain.hpp"
#include "index/detail/index_data.hpp"

#include <lucene++/SegmentTermEnum.h>
#include <lucene++/WhitespaceAnalyzer.h>
#include "plugin/atomic_directory.hpp"
#include "plugin/error.hpp"
#include "plugin/parallel.hpp"
#include "plugin/text_io.hpp"

namespace fs = std::filesystem;

namespace plumb::index {
namespace {

using detail::fsync_file;
using detail::fsync_path;
using detail::write_all;

/// Buffered FILE* that is closed on destruction.
struct OutFile {
    fs::path path;
    std::FILE* f = nullptr;
    explicit OutFile(fs::path p) : path(std::move(p)) {
        f = std::fopen(path.c_str(), "wb");
        if (!f) throw IoError("cannot create " + path.string() + ": " + std::strerror(errno));
        std::setvbuf(f, nullptr, _IOFBF, 1 << 20);
    }
    ~OutFile() {
        if (f) std::fclose(f);
    }
    void write(const void* d, std::size_t n) { write_all(f, d, n, path); }
    void finish() {
        fsync_file(f, path);
        int rc = std::fclose(f);
        f = nullptr;
        if (rc != 0) throw IoError("cannot close " + path.string());
    }
};

struct Batch {
    std::vector<std::string> texts;      // title + " " + text (as stored)
    std::vector<std::wstring> ids;       // filled by the analysis worker
    std::vector<std::string> ids_utf8;   // from the reader
    std::vector<std::wstring> bodies;    // analysed terms joined by spaces
    std::vector<std::uint32_t> lengths;  // exact analysed lengths
    std::size_t bytes = 0;
};

constexpr std::size_t kBatchDocs = 256;
constexpr std::size_t kBatchBytes = 1 << 20;

void check_cancel(const CancelToken* cancel) {
    if (cancel && cancel->requested()) throw Error("cancelled");
}

fs::path normalised_target(const fs::path& index_dir) {
    fs::path dir = fs::absolute(index_dir).lexically_normal();
    if (dir.filename().empty()) dir = dir.parent_path();
    return dir;
}

void analyse_batch(detail::AnalysisChain& chain, Batch& b) {
    std::size_t n = b.texts.size();
    b.ids.resize(n);
    b.bodies.resize(n);
    b.lengths.resize(n);
    std::wstring wide;
    for (std::size_t i = 0; i < n; ++i) {
        detail::utf8_to_wide(b.ids_utf8[i], b.ids[i]);
        detail::utf8_to_wide(b.texts[i], wide);
        std::wstring& body = b.bodies[i];
        body.clear();
        std::uint32_t count = 0;
        chain.run(wide, [&](const wchar_t* t, std::int32_t len) {
            if (count) body.push_back(L' ');
            body.append(t, static_cast<std::size_t>(len));
            ++count;
        });
        b.lengths[i] = count;
    }
}

/// Reads the optimised Lucene index back: checks it, and writes terms.bin with per-term
/// statistics and BM25 upper-bound data (default k1/b).
std::uint64_t write_term_dictionary(const fs::path& tmp, const std::vector<std::uint32_t>& doclen,
                                    std::uint64_t total_length,
                                    const std::vector<std::string>& sample_ids,
                                    const std::vector<std::uint32_t>& sample_docs,
                                    const CancelToken* cancel) {
    using namespace Lucene;
    const std::uint64_t n = doclen.size();
    double avgdl = n ? static_cast<double>(total_length) / static_cast<double>(n) : 0;
    const float k1 = 0.9f, b = 0.4f, k1p1 = k1 + 1.0f;
    std::vector<float> norm(n);
    for (std::uint64_t d = 0; d < n; ++d) norm[d] = detail::bm25_norm(k1, b, doclen[d], avgdl);

    OutFile out(tmp / "terms.bin");
    out.write(detail::kTermsMagic, 8);
    std::uint64_t count = 0;
    out.write(&count, sizeof count);  // patched below
    std::uint64_t postings_tf_sum = 0;

    // plumb's own postings (detail/postings.hpp), written in the same pass.
    OutFile post(tmp / detail::kPostingsFile);
    post.write(detail::kPostingsMagic, 8);
    // Term count, table offset, block table offset: patched below.
    std::uint64_t header[3] = {0, 0, 0};
    post.write(header, sizeof header);
    std::vector<std::uint64_t> post_off{detail::kPostingsHeader};
    detail::PostingsEncoder enc;
    // Block-max metadata (detail::PostingsBlock), kept in memory: 24 bytes per 128 postings.
    std::vector<detail::PostingsBlock> blocks;

    auto directory = newLucene<SimpleFSDirectory>(
        StringUtils::toUnicode((tmp / detail::kLuceneDir).string()));
    auto reader = IndexReader::open(directory, true);
    if (static_cast<std::uint64_t>(reader->maxDoc()) != n) {
        throw IndexError("internal: Lucene index holds " + std::to_string(reader->maxDoc()) +
                         " documents, expected " + std::to_string(n));
    }
    if (n > 0) {
        IndexReaderPtr segment = reader;
        auto subs = reader->getSequentialSubReaders();
        if (subs && subs.size() > 1) {
            throw IndexError("internal: index not optimised to one segment");
        }
        if (subs && subs.size() == 1) segment = subs[0];
        // Lucene document numbers must equal plumb's (corpus order).
        for (std::size_t i = 0; i < sample_docs.size(); ++i) {
            auto got = StringUtils::toUTF8(
                segment->document(static_cast<int32_t>(sample_docs[i]))->get(detail::kIdField));
            if (got != sample_ids[i]) {
                throw IndexError("internal: Lucene document order differs from corpus order");
            }
        }
        auto terms = segment->terms();
        auto seg_terms = boost::dynamic_pointer_cast<SegmentTermEnum>(terms);
        auto td = segment->termDocs();
        if (!seg_terms) throw IndexError("internal: unexpected Lucene++ term enumeration type");
        auto docs = Collection<int32_t>::newInstance(1024);
        auto freqs = Collection<int32_t>::newInstance(1024);
        std::string term_utf8;
        while (terms->next()) {
            auto term = terms->term();
            if (!term || term->field() != detail::kBodyField) continue;
            if ((count & 4095) == 0) check_cancel(cancel);
            auto ti = seg_terms->termInfo();
            detail::TermEntry e;
            e.df = ti->docFreq;
            e.freq_ptr = ti->freqPointer;
            e.prox_ptr = ti->proxPointer;
            e.skip_offset = ti->skipOffset;
            e.min_dl = 0xFFFFFFFFu;
            td->seek(terms);
            enc.clear();
            std::int64_t seen = 0;
            std::uint32_t in_block = 0;  // postings in blocks.back()
            while (true) {
                int32_t got = td->read(docs, freqs);
                if (got <= 0) break;
                for (int32_t i = 0; i < got; ++i) {
                    auto d = static_cast<std::uint32_t>(docs[i]);
                    auto tf = static_cast<std::uint32_t>(freqs[i]);
                    postings_tf_sum += tf;
                    if (in_block == 0) {
                        detail::PostingsBlock blk;
                        blk.offset = post_off.back() + enc.buf.size();
                        blk.min_dl = 0xFFFFFFFFu;
                        blocks.push_back(blk);
                    }
                    auto& blk = blocks.back();
                    const float frac = detail::bm25_frac(static_cast<float>(tf), k1p1, norm[d]);
                    blk.last_doc = d;
                    blk.max_tf = std::max(blk.max_tf, tf);
                    blk.min_dl = std::min(blk.min_dl, doclen[d]);
                    blk.max_frac = std::max(blk.max_frac, frac);
                    if (++in_block == detail::kPostingsBlock) in_block = 0;
                    enc.add(d, tf);
                    e.max_tf = std::max(e.max_tf, tf);
                    e.min_dl = std::min(e.min_dl, doclen[d]);
                    e.max_frac_default = std::max(e.max_frac_default, frac);
                }
                seen += got;
            }
            if (seen != e.df) throw IndexError("internal: postings length differs from df");
            post.write(enc.buf.data(), enc.buf.size());
            post_off.push_back(post_off.back() + enc.buf.size());
            const auto& text = term->text();
            term_utf8.clear();
            detail::wide_to_utf8(text.data(), text.size(), term_utf8);
            auto len = static_cast<std::uint32_t>(term_utf8.size());
            out.write(&len, sizeof len);
            out.write(term_utf8.data(), len);
            out.write(&e.df, sizeof e.df);
            out.write(&e.freq_ptr, sizeof e.freq_ptr);
            out.write(&e.prox_ptr, sizeof e.prox_ptr);
            out.write(&e.skip_offset, sizeof e.skip_offset);
            out.write(&e.max_tf, sizeof e.max_tf);
            out.write(&e.min_dl, sizeof e.min_dl);
            out.write(&e.max_frac_default, sizeof e.max_frac_default);
            ++count;
        }
        terms->close();
        td->close();
    }
    reader->close();
    if (postings_tf_sum != total_length) {
        throw IndexError("internal: Lucene token count " + std::to_string(postings_tf_sum) +
                         " differs from analysed length " + std::to_string(total_length));
    }
    if (std::fseek(out.f, 8, SEEK_SET) != 0) throw IoError("cannot seek in terms.bin");
    out.write(&count, sizeof count);
    out.finish();
    // Offset table, alignment, block table, padding, then the header fields.
    post.write(post_off.data(), post_off.size() * sizeof(std::uint64_t));
    const char zeros[detail::kPostingsPadding] = {};
    const std::uint64_t table_end = post_off.back() + post_off.size() * sizeof(std::uint64_t);
    const std::uint64_t block_table = (table_end + 7) / 8 * 8;
    post.write(zeros, block_table - table_end);
    // Block bounds rounded up by one ulp: the factors were computed with the searcher's float
    // arithmetic (same norm, same avgdl), so the maximum is already a bound; the ulp keeps it
    // one should the query-time norms be rounded differently (e.g. an FMA contraction of
    // bm25_norm). The searchers add kBoundSlack on top when they sum bounds.
    for (auto& blk : blocks) {
        blk.max_frac = std::nextafter(blk.max_frac, std::numeric_limits<float>::infinity());
    }
    post.write(blocks.data(), blocks.size() * sizeof(detail::PostingsBlock));
    post.write(zeros, sizeof zeros);
    header[0] = count;
    header[1] = post_off.back();
    header[2] = block_table;
    if (std::fseek(post.f, 8, SEEK_SET) != 0) throw IoError("cannot seek in postings.bin");
    post.write(header, sizeof header);
    post.finish();
    return count;
}

}  // namespace

IndexBuildStats build_index(const fs::path& corpus, const fs::path& index_dir,
                            const IndexBuildOptions& options, const ProgressCallback& progress,
                            const CancelToken* cancel) {
    using namespace Lucene;
    auto t0 = std::chrono::steady_clock::now();
    const fs::path dir = normalised_target(index_dir);
    if (fs::exists(dir)) {
        if (!fs::is_directory(dir)) {
            throw IndexError("cannot build an index at " + dir.string() +
                             ": it exists and is not a directory");
        }
        if (!fs::is_empty(dir) && !fs::exists(dir / detail::kMetaFile)) {
            throw IndexError("refusing to replace " + dir.string() +
                             ": it exists, is not empty and is not a plumb index");
        }
    }
    // Written into a temporary sibling and swapped into place by commit(); stale temporaries
    // of builds killed before they could clean up are removed first.
    AtomicDirectory out(dir);
    const fs::path& tmp = out.path();
    fs::create_directories(tmp / detail::kLuceneDir);

    CorpusReaderOptions reader_options;
    reader_options.format = options.format;
    reader_options.skip_bad = options.skip_bad;
    reader_options.max_bad_share = options.max_bad_share;
    reader_options.first_byte = options.first_byte;
    reader_options.end_byte = options.end_byte;
    CorpusReader reader(corpus, reader_options);
    IndexBuildStats stats;

    // Side files written in corpus order by this thread.
    OutFile text_out(tmp / "text.dat");
    std::vector<std::uint64_t> text_off{0};
    std::string ids;
    std::vector<std::uint64_t> id_off{0};
    std::vector<std::uint64_t> id_line;
    std::vector<std::uint32_t> id_file;     // index into file_names (folders, archives)
    std::vector<std::string> file_names;
    std::unordered_multimap<std::size_t, std::uint32_t> id_hashes;
    std::vector<std::uint32_t> doclen;  // written by the writer thread only
    std::uint64_t total_length = 0;

    IndexWriterPtr writer;
    try {
        auto directory = newLucene<SimpleFSDirectory>(
            StringUtils::toUnicode((tmp / detail::kLuceneDir).string()));
        writer = newLucene<IndexWriter>(directory, newLucene<WhitespaceAnalyzer>(), true,
                                        IndexWriter::MaxFieldLengthUNLIMITED);
        writer->setRAMBufferSizeMB(options.ram_buffer_mb);
        writer->setUseCompoundFile(false);
        writer->setMergeFactor(20);
    } catch (const LuceneException& e) {
        detail::rethrow_lucene(e, "cannot create index in " + tmp.string());
    }

    // Pipeline: this thread reads and checks ids -> `threads` analysis workers -> one writer
    // thread adding documents in corpus order (Lucene document number == corpus position).
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::pair<std::size_t, std::unique_ptr<Batch>>> todo;
    std::map<std::size_t, std::unique_ptr<Batch>> done;
    std::size_t submitted = 0, written = 0;
    bool input_done = false, stop = false;
    const unsigned workers = std::max(1u, options.threads);
    const std::size_t max_inflight = 4 * workers + 2;

    // Wakes every thread to stop: called by the thread group when a worker fails (it keeps the
    // first error for join()), and by this thread when it fails.
    auto request_stop = [&] {
        std::lock_guard lock(mu);
        stop = true;
        cv.notify_all();
    };
    auto analyse = [&] {
        try {
            detail::AnalysisChain chain(options.analysis);
            while (true) {
                std::pair<std::size_t, std::unique_ptr<Batch>> job;
                {
                    std::unique_lock lock(mu);
                    cv.wait(lock, [&] { return stop || !todo.empty() || input_done; });
                    if (stop) return;
                    if (todo.empty()) return;  // input_done
                    job = std::move(todo.front());
                    todo.pop_front();
                }
                analyse_batch(chain, *job.second);
                std::lock_guard lock(mu);
                done.emplace(job.first, std::move(job.second));
                cv.notify_all();
            }
        } catch (const LuceneException& e) {
            detail::rethrow_lucene(e, "analysis failed");
        }
    };
    auto write = [&] {
        try {
            auto doc = newLucene<Lucene::Document>();
            auto id_field = newLucene<Field>(detail::kIdField, L"", Field::STORE_YES,
                                             Field::INDEX_NO);
            auto body_field = newLucene<Field>(detail::kBodyField, L"", Field::STORE_NO,
                                               Field::INDEX_ANALYZED_NO_NORMS);
            doc->add(id_field);
            doc->add(body_field);
            while (true) {
                std::unique_ptr<Batch> batch;
                {
                    std::unique_lock lock(mu);
                    cv.wait(lock, [&] {
                        return stop || done.count(written) ||
                               (input_done && written == submitted);
                    });
                    if (stop) return;
                    auto it = done.find(written);
                    if (it == done.end()) return;  // all written
                    batch = std::move(it->second);
                    done.erase(it);
                }
                for (std::size_t i = 0; i < batch->texts.size(); ++i) {
                    id_field->setValue(batch->ids[i]);
                    body_field->setValue(batch->bodies[i]);
                    writer->addDocument(doc);
                    doclen.push_back(batch->lengths[i]);
                    total_length += batch->lengths[i];
                }
                std::lock_guard lock(mu);
                ++written;
                cv.notify_all();
            }
        } catch (const LuceneException& e) {
            detail::rethrow_lucene(e, "adding documents failed");
        }
    };

    // Threads 0 .. workers-1 analyse, thread `workers` writes. Declared after everything they
    // use, so that it is joined before any of it is destroyed.
    ThreadGroup pool;
    auto finish_input = [&] {
        std::lock_guard lock(mu);
        input_done = true;
        cv.notify_all();
    };
    auto stop_all = [&] {
        request_stop();
        (void)pool.wait();  // this thread's exception takes precedence
    };
    auto abort_writer = [&] {
        try {
            if (writer) writer->rollback();
        } catch (...) {
        }
        writer.reset();
    };

    try {
        pool.start(
            workers + 1, [&](unsigned w) { w < workers ? analyse() : write(); }, request_stop);

        auto batch = std::make_unique<Batch>();
        auto submit = [&] {
            std::unique_lock lock(mu);
            cv.wait(lock, [&] { return stop || submitted - written < max_inflight; });
            if (stop) return;
            todo.emplace_back(submitted++, std::move(batch));
            cv.notify_all();
            batch = std::make_unique<Batch>();
        };
        plumb::index::Document d;
        std::string joined;
        std::uint64_t last_report = 0;
        std::uint64_t position = 0;  // records read, in corpus order (a shard's range)
        while (stats.documents < options.max_documents && reader.next(d)) {
            if (position++ < options.first_document) {
                if ((position & 4095) == 0) check_cancel(cancel);
                continue;
            }
            if ((stats.documents & 255) == 0) {
                check_cancel(cancel);
                std::lock_guard lock(mu);
                if (stop) break;
            }
            if (stats.documents >= 0xFFFFFFF0ull) {
                throw IndexError("too many documents for one index (max 2^32 - 16)");
            }
            auto doc = static_cast<std::uint32_t>(stats.documents);
            // Duplicate id check: hash -> documents with that hash, compared exactly.
            std::size_t h = std::hash<std::string_view>{}(d.id);
            auto range = id_hashes.equal_range(h);
            for (auto it = range.first; it != range.second; ++it) {
                std::string_view other(ids.data() + id_off[it->second],
                                       id_off[it->second + 1] - id_off[it->second]);
                if (other == d.id) {
                    const std::string& first_file = file_names[id_file[it->second]];
                    const std::uint64_t first_line = id_line[it->second];
                    std::string where;
                    if (first_file == reader.name()) {
                        where = "first at line " + std::to_string(reader.file_line(first_line));
                    } else {
                        where = "first in " + first_file +
                                (first_line > 0 ? ":" + std::to_string(first_line) : "");
                    }
                    throw ParseError(reader.name(), reader.file_line(reader.line_number()),
                                     "duplicate document id '" + d.id + "' (" + where + ")");
                }
            }
            id_hashes.emplace(h, doc);
            ids += d.id;
            id_off.push_back(ids.size());
            id_line.push_back(reader.line_number());
            if (file_names.empty() || file_names.back() != reader.name()) {
                file_names.push_back(reader.name());
            }
            id_file.push_back(static_cast<std::uint32_t>(file_names.size() - 1));

            if (d.title.empty() || !options.title) {
                joined = std::move(d.text);
            } else {
                joined = d.title;
                joined += ' ';
                joined += d.text;
            }
            text_out.write(joined.data(), joined.size());
            text_off.push_back(text_off.back() + joined.size());
            batch->bytes += joined.size();
            batch->ids_utf8.push_back(d.id);
            batch->texts.push_back(std::move(joined));
            ++stats.documents;
            if (batch->texts.size() >= kBatchDocs || batch->bytes >= kBatchBytes) submit();
            if (progress && reader.bytes_read() - last_report >= (1u << 20)) {
                last_report = reader.bytes_read();
                progress(reader.bytes_read(), reader.size_bytes());
            }
        }
        if (!batch->texts.empty()) submit();
        finish_input();
        pool.join();  // rethrows the first error of a worker or the writer
        stats.skipped = reader.skipped();
        if (progress) progress(reader.bytes_read(), reader.size_bytes());
        check_cancel(cancel);

        writer->optimize();
        writer->close();
        writer.reset();
    } catch (const LuceneException& e) {
        stop_all();
        abort_writer();
        detail::rethrow_lucene(e, "indexing failed");
    } catch (...) {
        stop_all();
        abort_writer();
        throw;
    }
    id_hashes.clear();
    text_out.finish();
    check_cancel(cancel);

    // Side files.
    const std::uint64_t n = stats.documents;
    if (n == 0 && !options.allow_empty) {
        throw ParseError(corpus.string(), 0,
                         "the corpus holds no documents (an empty file? pass --allow-empty to "
                         "build an empty index on purpose)");
    }
    std::vector<std::uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    auto id_of = [&](std::uint32_t doc) {
        return std::string_view(ids.data() + id_off[doc], id_off[doc + 1] - id_off[doc]);
    };
    std::sort(order.begin(), order.end(),
              [&](std::uint32_t a, std::uint32_t b) { return id_of(a) < id_of(b); });
    std::vector<std::uint32_t> idrank(n);
    for (std::uint32_t r = 0; r < n; ++r) idrank[order[r]] = r;
    detail::write_vector_file(tmp / "doclen.u32", doclen);
    detail::write_vector_file(tmp / "idrank.u32", idrank);
    detail::write_vector_file(tmp / "ids.off", id_off);
    detail::write_vector_file(tmp / "text.off", text_off);
    {
        OutFile f(tmp / "ids.dat");
        f.write(ids.data(), ids.size());
        f.finish();
    }
    std::vector<std::string> sample_ids;
    std::vector<std::uint32_t> sample_docs;
    if (n > 0) {
        for (std::uint64_t d : {std::uint64_t{0}, n / 2, n - 1}) {
            sample_docs.push_back(static_cast<std::uint32_t>(d));
            sample_ids.emplace_back(id_of(static_cast<std::uint32_t>(d)));
        }
    }
    try {
        stats.terms =
            write_term_dictionary(tmp, doclen, total_length, sample_ids, sample_docs, cancel);
    } catch (const LuceneException& e) {
        detail::rethrow_lucene(e, "reading back the index failed");
    }
    stats.total_length = total_length;

    // Make everything durable, then write the commit marker last.
    for (const auto& entry : fs::directory_iterator(tmp / detail::kLuceneDir)) {
        if (entry.is_regular_file()) fsync_path(entry.path());
    }
    fsync_path(tmp / detail::kLuceneDir);
    nlohmann::json meta = {
        {"format", detail::kFormatName},
        {"version", detail::kFormatVersion},
        {"analysis", options.analysis.name()},
        {"analyzer", analyzer_kind_name(options.analysis.analyzer)},
        {"documents", n},
        {"total_length", total_length},
        {"terms", stats.terms},
        {"skipped_lines", stats.skipped},
        {"corpus", fs::absolute(corpus).string()},
        {"corpus_format", corpus_format_name(options.format)},
        {"title", options.title},
        {"bm25_bounds", {{"k1", 0.9}, {"b", 0.4}}},
        {"postings", {{"file", detail::kPostingsFile}, {"version", detail::kPostingsVersion}}},
        {"lucene", "Lucene++ 3.0.8, field body, one segment, SimpleFSDirectory"},
    };
    {
        AtomicFile f(tmp / detail::kMetaFile);
        f.write(meta.dump(2) + "\n");
        f.commit();
    }
    check_cancel(cancel);
    out.commit();  // fsyncs, then exchanges with the previous index (removed)
    stats.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return stats;
}

}  // namespace plumb::index
