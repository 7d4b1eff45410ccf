#pragma once
/// \file detail/vector_store.hpp
/// Reading a vector folder (rerank/vector_store.hpp) for the dense index (internal).

#include <filesystem>

#include "rerank/vector_store.hpp"

namespace plumb::rerank::detail {

/// VectorStore::load(dir), or with `with_vectors` false its meta, ids and completeness only
/// (`vectors` stays empty; the chunk files are not read). Throws as VectorStore::load.
VectorStore load_vector_store(const std::filesystem::path& dir, bool with_vectors);

}  // namespace plumb::rerank::detail
