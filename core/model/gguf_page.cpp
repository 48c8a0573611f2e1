// gguf_page.cpp: gguf.hpp in the page's build. The page does not open GGUF files yet (its Open
// a model… takes a folder of safetensors), and the reader, with the config and tokenizer it
// builds, would take about 40 KB of the page's wasm, past the notebook's 2 MB budget
// (docs/BENCHMARKS.md, the web budget). So in the page a GGUF file is refused, by name, with
// where it opens: the native app and `attnviz run`. Natively gguf.cpp is built instead.
#include "gguf.hpp"

namespace attn {

namespace {

[[noreturn]] void refuse(const std::string& file) {
    throw ModelError(file, "", "a GGUF file: the page does not open GGUF files yet; attnviz's native app and `attnviz run FILE.gguf` do");
}

}  // namespace

// What the rest of the page's core calls (model.cpp, checkpoint.cpp): read_gguf refuses first.
GgufFile read_gguf(const FileBytes&, const std::string& file) { refuse(file); }
GgufModel gguf_model(const GgufFile& g, const FileBytes&) { refuse(g.file); }
std::string gguf_tokenizer_json(const GgufFile& g) { refuse(g.file); }

}  // namespace attn
