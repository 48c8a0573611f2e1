// tokenizer_json.cpp: tokenizer.json as Hugging Face's tokenizers (0.2x, tokenizers/src/) runs it:
//   1. added tokens whose "normalized" is false are found in the raw text (leftmost, longest
//      first; "lstrip" / "rstrip" take the white space beside them into the token, "single_word"
//      only between non-word characters); each stretch of text between them goes on alone
//   2. the normalizer, on each stretch; then the normalized added tokens found in its result
//   3. the pre-tokenizer splits what is left into words (ByteLevel maps bytes to GPT-2's
//      printable alphabet, Metaspace spaces to "▁")
//   4. the model turns each word into ids: BPE (byte fallback, ignore_merges, fuse_unk),
//      Unigram, WordPiece or WordLevel
//   5. encode_with_specials: the post-processor's ids around them (TemplateProcessing, …)
// Token labels (Tokenizer::text) come from the decoder. A component, option or pattern this file
// does not implement is refused with ModelError naming its JSON field: never a silently
// different tokenization. Not applied: "truncation" and "padding" (they shape batches; attnviz
// encodes one text and refuses one longer than the model's positions itself), BPE dropout
// (random; refused unless 0), the UnicodeScripts pre-tokenizer and the CTC decoder (refused).
//
// The pipeline and its parts: tokenizer_impl.hpp; each part's table in its own file
// (tokenizer_normalizers.cpp, …); the models in tokenizer_bpe.cpp, tokenizer_unigram.cpp,
// tokenizer_wordpiece.cpp and tokenizer_wordlevel.cpp.
#include "tokenizer_impl.hpp"

#include <nlohmann/json.hpp>

namespace attn::tok {
namespace {

using ModelRead = std::unique_ptr<WordModel> (*)(const Field&, Vocab&);
const TypeRow<ModelRead> kModels[] = {
    {"BPE", read_bpe_model},
    {"Unigram", read_unigram_model},
    {"WordPiece", read_wordpiece_model},
    {"WordLevel", read_wordlevel_model},
};

std::unique_ptr<WordModel> read_model(const Field& f, Vocab& vocab) {
    const std::string type = f.type();
    for (const auto& row : kModels)
        if (type == row.type) return row.read(f, vocab);
    f.at("type").fail("\"" + type + "\" is not BPE, Unigram, WordPiece or WordLevel");
}

bool is_byte_level(const Field& f) {  // a ByteLevel pre-tokenizer or decoder, alone or in a Sequence
    if (!f.j.is_object() || !f.j.contains("type") || !f.j["type"].is_string()) return false;
    const std::string type = f.j["type"].get<std::string>();
    if (type == "ByteLevel") return true;
    for (const char* list : {"pretokenizers", "decoders"})
        if (type == "Sequence" && f.j.contains(list) && f.j[list].is_array())
            for (size_t i = 0; i < f.j[list].size(); ++i)
                if (is_byte_level(f.at(list).at(i))) return true;
    return false;
}

}  // namespace
}  // namespace attn::tok

namespace attn {

Tokenizer read_tokenizer_json(std::string_view json, const std::string& file) {
    using namespace tok;
    const Json j = Json::parse(json, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw ModelError(file, "", "malformed JSON");
    const Field top{j, "", file};
    const Field model = top.at("model");
    if (!model.j.is_object()) model.fail("missing");
    const std::string type = model.at("type").str_or("");
    const bool byte_level = is_byte_level(top.at("pre_tokenizer")) || is_byte_level(top.at("decoder"));
    const TokenizerKind kind = type == "WordPiece" ? TokenizerKind::WordPiece
                             : type == "Unigram"   ? TokenizerKind::Unigram
                             : byte_level          ? TokenizerKind::ByteLevelBpe
                                                   : TokenizerKind::Bpe;
    auto p = std::make_shared<Tokenizer::Impl>(kind, Vocab());
    p->model = read_model(model, p->vocab);
    if (!top.at("normalizer").missing()) p->normalizer = read_normalizer(top.at("normalizer"));
    if (!top.at("pre_tokenizer").missing()) p->pre_tokenizer = read_pre_tokenizer(top.at("pre_tokenizer"));
    if (!top.at("decoder").missing()) p->decoder = read_decoder(top.at("decoder"));
    const std::vector<AddedToken> added = read_added_tokens(top.at("added_tokens"), p->vocab, p->normalizer);
    p->added.assign(p->vocab.tokens.size(), false);
    for (const AddedToken& t : added) {
        p->added[static_cast<size_t>(t.id)] = true;
        if (t.content.empty()) continue;  // normalized to nothing: never matched
        (t.normalized ? p->normalized_added : p->raw_added).add(t);
    }
    if (!top.at("post_processor").missing()) {
        p->post_processor = read_post_processor(top.at("post_processor"), p->vocab);
        std::vector<int> none;
        p->post_processor(none);
        p->post_adds = !none.empty();
    }
    return Tokenizer(std::move(p));
}

}  // namespace attn
