// tokenizer.cpp: the Tokenizer class, vocabularies, and tokenizer.json (one reader for the three
// kinds; each kind's own files are read in tokenizer_bpe.cpp, tokenizer_wordpiece.cpp and
// tokenizer_unigram.cpp).
//
// [SECTION] The tokenizer
// [SECTION] Vocabularies
// [SECTION] tokenizer.json
#include "tokenizer_impl.hpp"
#include "unicode.hpp"

#include <nlohmann/json.hpp>

namespace attn {

// [SECTION] The tokenizer --------------------------------------------------------------------

Tokenizer::Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
TokenizerKind Tokenizer::kind() const { return impl_->kind; }
std::vector<int> Tokenizer::encode(std::string_view text) const { return impl_->encode(text); }
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
    for (const std::string* token : by_id) out.add(*token);
    return out;
}

// [SECTION] tokenizer.json -------------------------------------------------------------------

namespace {

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

// The Precompiled normalizer's charsmap, alone or in a Sequence; "" when there is none.
std::string precompiled_charsmap(const nlohmann::json& normalizer, const std::string& file) {
    if (!normalizer.is_object()) return "";
    const std::string type = normalizer.value("type", "");
    if (type == "Precompiled") {
        const auto it = normalizer.find("precompiled_charsmap");
        if (it == normalizer.end() || it->is_null()) return "";
        if (!it->is_string()) throw ModelError(file, "normalizer.precompiled_charsmap", "expected base64 text");
        return base64_decode(it->get<std::string>(), file, "normalizer.precompiled_charsmap");
    }
    if (type == "Sequence" && normalizer.contains("normalizers") && normalizer["normalizers"].is_array())
        for (const auto& n : normalizer["normalizers"])
            if (std::string s = precompiled_charsmap(n, file); !s.empty()) return s;
    return "";
}

bool flag(const nlohmann::json& object, const char* key, bool otherwise) {
    const auto it = object.is_object() ? object.find(key) : object.end();
    return it != object.end() && it->is_boolean() ? it->get<bool>() : otherwise;
}

}  // namespace

Tokenizer read_tokenizer_json(std::string_view json, const std::string& file) {
    const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw ModelError(file, "", "malformed JSON");
    if (!j.contains("model") || !j["model"].is_object()) throw ModelError(file, "model", "missing");
    const nlohmann::json& model = j["model"];
    const std::string type = model.value("type", "");
    const nlohmann::json& normalizer = j.contains("normalizer") ? j["normalizer"] : nlohmann::json();
    if (type == "BPE") {
        Vocab vocab = read_vocab_object(model.value("vocab", nlohmann::json()), file, "model.vocab");
        std::vector<BpeMerge> merges;
        const nlohmann::json m = model.value("merges", nlohmann::json::array());
        if (!m.is_array()) throw ModelError(file, "model.merges", "expected a list");
        for (size_t i = 0; i < m.size(); ++i) {
            const std::string at = "model.merges[" + std::to_string(i) + "]";
            if (m[i].is_string()) {  // "a b"
                const std::string s = m[i].get<std::string>();
                const size_t space = s.find(' ');
                if (space == std::string::npos || space == 0 || space + 1 == s.size()) throw ModelError(file, at, "expected two tokens separated by a space");
                merges.push_back({s.substr(0, space), s.substr(space + 1), static_cast<int>(i)});
            } else if (m[i].is_array() && m[i].size() == 2 && m[i][0].is_string() && m[i][1].is_string()) {  // ["a", "b"]
                merges.push_back({m[i][0].get<std::string>(), m[i][1].get<std::string>(), static_cast<int>(i)});
            } else {
                throw ModelError(file, at, "expected \"a b\" or [\"a\", \"b\"]");
            }
        }
        return Tokenizer(make_bpe(std::move(vocab), merges, file, file));
    }
    if (type == "WordPiece") {
        Vocab vocab = read_vocab_object(model.value("vocab", nlohmann::json()), file, "model.vocab");
        WordPieceOptions o;
        o.lower_case = flag(normalizer, "lowercase", true);
        o.strip_accents = flag(normalizer, "strip_accents", o.lower_case);
        o.chinese_chars = flag(normalizer, "handle_chinese_chars", true);
        o.unk = model.value("unk_token", std::string("[UNK]"));
        o.max_chars_per_word = model.value("max_input_chars_per_word", 100);
        return Tokenizer(make_wordpiece(std::move(vocab), o, file));
    }
    if (type == "Unigram") {
        const nlohmann::json v = model.value("vocab", nlohmann::json());
        if (!v.is_array() || v.empty()) throw ModelError(file, "model.vocab", "expected a list of [piece, score]");
        std::vector<UnigramPiece> pieces;
        for (size_t i = 0; i < v.size(); ++i) {
            if (!v[i].is_array() || v[i].size() != 2 || !v[i][0].is_string() || !v[i][1].is_number())
                throw ModelError(file, "model.vocab[" + std::to_string(i) + "]", "expected [piece, score]");
            pieces.push_back({v[i][0].get<std::string>(), v[i][1].get<float>(), 1});
        }
        const int unk = model.value("unk_id", -1);
        if (unk < 0 || unk >= static_cast<int>(pieces.size())) throw ModelError(file, "model.unk_id", "expected the id of a piece");
        pieces[static_cast<size_t>(unk)].type = 2;
        if (j.contains("added_tokens") && j["added_tokens"].is_array())
            for (const auto& t : j["added_tokens"])  // special tokens: never matched in text
                if (t.is_object() && t.value("special", false) && t.value("id", -1) >= 0 && t.value("id", -1) < static_cast<int>(pieces.size()) &&
                    t.value("id", -1) != unk)
                    pieces[static_cast<size_t>(t.value("id", -1))].type = 3;
        UnigramNormalizer n;
        n.charsmap = precompiled_charsmap(normalizer, file);
        const nlohmann::json pre = j.contains("pre_tokenizer") ? j["pre_tokenizer"] : nlohmann::json();
        n.add_dummy_prefix = flag(pre, "add_prefix_space", pre.is_object() ? pre.value("prepend_scheme", "always") != "never" : true);
        return Tokenizer(make_unigram(std::move(pieces), std::move(n), std::nullopt, file));
    }
    throw ModelError(file, "model.type", "\"" + type + "\" is not BPE, WordPiece or Unigram");
}

}  // namespace attn
