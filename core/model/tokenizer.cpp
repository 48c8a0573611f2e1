// tokenizer.cpp: the Tokenizer class and the pipeline's run (tokenizer_impl.hpp: what the
// pipeline is, and which file holds each part), vocabularies, tokenizer.json's fields, base64.
//
// [SECTION] The tokenizer
// [SECTION] The pipeline
// [SECTION] Vocabularies
// [SECTION] JSON fields
// [SECTION] Word models
// [SECTION] Base64
#include "tokenizer_impl.hpp"
#include "unicode.hpp"

#include <nlohmann/json.hpp>

namespace attn {

// [SECTION] The tokenizer --------------------------------------------------------------------

Tokenizer::Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
TokenizerKind Tokenizer::kind() const { return impl_->kind; }
std::vector<int> Tokenizer::encode(std::string_view text) const { return impl_->encode(text); }
std::vector<int> Tokenizer::encode_with_specials(std::string_view text) const { return with_specials(impl_->encode(text)); }
std::vector<int> Tokenizer::with_specials(std::vector<int> ids) const {
    if (impl_->post_processor) impl_->post_processor(ids);  // [pass 5]
    return ids;
}
bool Tokenizer::adds_specials() const { return impl_->post_adds; }
const std::string& Tokenizer::token(int id) const { return impl_->vocab.tokens[static_cast<size_t>(id)]; }
std::string Tokenizer::text(int id) const { return impl_->text(id); }
int Tokenizer::size() const { return static_cast<int>(impl_->vocab.tokens.size()); }

std::optional<int> Tokenizer::id(std::string_view token) const {
    const int id = impl_->vocab.find(std::string(token), -1);
    return id < 0 ? std::nullopt : std::optional<int>(id);
}

// [SECTION] The pipeline ---------------------------------------------------------------------
//   1. SentencePiece's normalizer, on the text's bytes (a bad byte is U+FFFD only where its
//      charsmap has no key for it, as sentencepiece reads it); then the text as characters (a
//      bad byte U+FFFD)
//   2. added tokens whose "normalized" is false found in the text; each stretch between them
//      goes on alone
//   3. the normalizer, on each stretch; then the normalized added tokens found in its result
//   4. the pre-tokenizer splits what is left into words; the word model turns each into ids
//   5. encode_with_specials: the post-processor's ids around them

std::vector<int> Tokenizer::Impl::encode(std::string_view text) const {
    using tok::Piece, tok::u32, tok::utf8;
    std::vector<int> out;
    const std::string normalized = byte_normalizer ? byte_normalizer(text) : std::string();  // [pass 1]
    Piece whole{u32(byte_normalizer ? std::string_view(normalized) : text), true};
    auto words = [&](Piece p) {  // [pass 4]
        tok::Pieces pieces;
        if (!p.text.empty()) pieces.push_back(std::move(p));
        if (pre_tokenizer) pre_tokenizer(pieces);
        for (const Piece& w : pieces) model->encode(utf8(w.text), out);
    };
    auto added_id = [&](int id) { out.push_back(id); };
    auto normalize = [&](Piece p) {  // [pass 3]
        if (normalizer) normalizer(p);
        if (normalized_added.empty()) return words(std::move(p));
        normalized_added.split(p, words, added_id);
    };
    raw_added.split(whole, normalize, added_id);  // [pass 2]
    return out;
}

// A label is one token as it reads in the middle of a text: an added token as it is, another
// through the decoder.
std::string Tokenizer::Impl::text(int id) const {
    std::string t = vocab.tokens[static_cast<size_t>(id)];
    const bool is_added = static_cast<size_t>(id) < added.size() && added[static_cast<size_t>(id)];
    if (decoder && !is_added) decoder(t);
    return t;
}

}  // namespace attn

namespace attn::tok {

// [SECTION] Vocabularies ---------------------------------------------------------------------

Vocab read_vocab_object(const nlohmann::json& vocab, const std::string& file, const std::string& where) {
    if (!vocab.is_object() || vocab.empty()) throw ModelError(file, where, "expected an object of tokens and their ids");
    std::vector<const std::string*> by_id(vocab.size(), nullptr);
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
        const std::string at = where.empty() ? it.key() : where + "." + it.key();
        if (!it.value().is_number_integer()) throw ModelError(file, at, "expected an id (a whole number)");
        const long long id = it.value().get<long long>();
        if (id < 0 || id >= static_cast<long long>(by_id.size()))
            throw ModelError(file, at, "id " + std::to_string(id) + " is outside 0 to " + std::to_string(by_id.size() - 1) +
                                           " (one id per token, from 0)");
        if (by_id[static_cast<size_t>(id)]) throw ModelError(file, at, "id " + std::to_string(id) + " is also \"" + *by_id[static_cast<size_t>(id)] + "\"");
        by_id[static_cast<size_t>(id)] = &it.key();
    }
    Vocab out;
    out.tokens.reserve(by_id.size() + 1024);  // room for a tokenizer.json's added tokens
    out.ids.reserve(by_id.size() + 1024);
    for (const std::string* token : by_id) out.add(*token);
    return out;
}

// [SECTION] JSON fields --------------------------------------------------------------------

Field Field::at(const std::string& key) const {
    static const nlohmann::json kNull;  // immutable: what a missing key reads as
    if (!j.is_object()) fail("expected an object");
    const auto it = j.find(key);
    return {it == j.end() ? kNull : *it, path.empty() ? key : path + "." + key, file};
}
Field Field::at(size_t i) const { return {j[i], path + "[" + std::to_string(i) + "]", file}; }
bool Field::missing() const { return j.is_null(); }
bool Field::is_object() const { return j.is_object(); }
std::string Field::str() const {
    if (!j.is_string()) fail("expected a string");
    return j.get<std::string>();
}
bool Field::flag(bool otherwise) const {
    if (missing()) return otherwise;
    if (!j.is_boolean()) fail("expected true or false");
    return j.get<bool>();
}
long long Field::integer() const {
    if (!j.is_number_integer()) fail("expected a whole number");
    return j.get<long long>();
}
double Field::number() const {
    if (!j.is_number()) fail("expected a number");
    return j.get<double>();
}
const nlohmann::json& Field::list() const {
    if (!j.is_array()) fail("expected a list");
    return j;
}
size_t Field::length() const { return list().size(); }

// [SECTION] Word models ----------------------------------------------------------------------

int unk_token_id(const Field& name, const Vocab& vocab) {
    if (name.missing()) return -1;
    const int id = vocab.find(name.str(), -1);
    if (id < 0) name.fail("\"" + name.str() + "\" is not in the vocabulary");
    return id;
}

bool byte_fallback_ids(const WordModel& model, std::string_view s, std::vector<int>& out) {
    constexpr char kHex[] = "0123456789ABCDEF";
    std::vector<int> ids;
    std::string token = "<0x00>";
    for (unsigned char b : s) {
        token[3] = kHex[b >> 4], token[4] = kHex[b & 15];
        const int id = model.find(token);
        if (id < 0) return false;
        ids.push_back(id);
    }
    out.insert(out.end(), ids.begin(), ids.end());
    return true;
}

// [SECTION] Base64 ---------------------------------------------------------------------------

std::string base64_decode(std::string_view text, const std::string& file, const std::string& where) {
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
    };
    std::string out;
    unsigned bits = 0;
    int n = 0;
    for (char c : text) {
        if (c == '=') break;
        const int v = value(c);
        if (v < 0) throw ModelError(file, where, "expected base64");
        bits = (bits << 6) | static_cast<unsigned>(v);
        if ((n += 6) >= 8) {
            n -= 8;
            out += static_cast<char>((bits >> n) & 0xFF);
        }
    }
    return out;
}

}  // namespace attn::tok
