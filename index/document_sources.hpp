#pragma once
/// \file document_sources.hpp
/// Where passage text comes from when a command re-ranks or filters an existing run: a plumb
/// index (its stored text) or a corpus file read into memory. One function for every surface.

#include <filesystem>
#include <memory>
#include <string>
#include <unordered_set>

#include "plugin/document_source.hpp"
#include "plugin/registry.hpp"

namespace plumb::index {

class PassageIndex;

/// `prefix` + the canonical form of `dir` (as given when it cannot be resolved): the key of a
/// resource opened once per StageContext.
std::string resource_key(const std::string& prefix, const std::filesystem::path& dir);

/// The passage index at `dir`, opened once per StageContext (stages configured on the same
/// index share it).
std::shared_ptr<const PassageIndex> shared_passage_index(StageContext& ctx,
                                                         const std::filesystem::path& dir);

/// A plumb index at `index_dir` (a sharded one too: ShardedDocuments), or the corpus file `corpus` (any format of
/// detect_corpus_format(); a document's text is its title and text joined by a space, as the
/// index stores them) held in memory; exactly one of the two must be non-empty (ConfigError
/// otherwise). With `wanted`, only those documents of the corpus are kept. `format` names the
/// corpus format (parse_corpus_format), empty = detected. A document id twice in the corpus is a
/// ParseError naming file and line.
std::shared_ptr<const DocumentSource> open_document_source(
    const std::string& index_dir, const std::string& corpus,
    const std::unordered_set<std::string>* wanted = nullptr, const std::string& format = {});

}  // namespace plumb::index
