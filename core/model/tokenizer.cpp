// tokenizer.cpp: the Tokenizer class, vocabularies and base64 (tokenizer.json is read in
// tokenizer_json.cpp; each kind's own files in tokenizer_bpe.cpp, tokenizer_wordpiece.cpp and
// tokenizer_unigram.cpp).
//
// [SECTION] The tokenizer
// [SECTION] Vocabularies
// [SECTION] Base64
#include "tokenizer_impl.hpp"
#include "unicode.hpp"

#include <nlohmann/json.hpp>

namespace attn {

// [SECTION] The tokenizer --------------------------------------------------------------------

Tokenizer::Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
TokenizerKind Tokenizer::kind() const { return impl_->kind; }
std::vector<int> Tokenizer::encode(std::string_view text) const { return impl_->encode(text); }
std::vector<int> Tokenizer::encode_with_specials(std::string_view text) const { return impl_->encode_with_specials(text); }
bool Tokenizer::adds_specials() const { return impl_->adds_specials(); }
const std::string& Tokenizer::token(int id) const { return impl_->vocab.tokens[static_cast<size_t>(id)]; }
std::string Tokenizer::text(int id) const { return impl_->text(id); }

std::string Tokenizer::Impl::text(int id) const {
    const std::string& t = vocab.tokens[static_cast<size_t>(id)];
    if (kind == TokenizerKind::WordPiece) return t.size() > 2 && t.rfind("##", 0) == 0 ? t.substr(2) : t;
    std::string out;  // SentencePiece: "▁" (U+2581) is a space
    for (char32_t c : unicode::decode(t)) unicode::append_utf8(out, c == U'\u2581' ? U' ' : c);
    return out;
}

int Tokenizer::size() const { return static_cast<int>(impl_->vocab.tokens.size()); }

std::optional<int> Tokenizer::id(std::string_view token) const {
    const int id = impl_->vocab.find(std::string(token), -1);
    return id < 0 ? std::nullopt : std::optional<int>(id);
}

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

}  // namespace attn
