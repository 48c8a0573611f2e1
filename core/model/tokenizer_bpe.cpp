// tokenizer_bpe.cpp: GPT-2's byte-level BPE (vocab.json + merges.txt, or tokenizer.json's "BPE"
// model), as gpt-3-encoder and Hugging Face do it:
//   1. pre-tokenize with GPT-2's pattern, matched by hand below:
//        's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   2. each piece's UTF-8 bytes as GPT-2's byte alphabet (a printable character per byte)
//   3. merge the adjacent pair of lowest rank in merges.txt, again and again
//   4. each symbol's id in vocab.json
#include "tokenizer_impl.hpp"
#include "unicode.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <climits>

namespace attn {
namespace {

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the others for
// U+0100 onwards in byte order. As UTF-8 strings.
std::array<std::string, 256> byte_symbols() {
    std::array<std::string, 256> out;
    int n = 0;
    for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        unicode::append_utf8(out[static_cast<size_t>(b)], static_cast<char32_t>(printable ? b : 256 + n++));
    }
    return out;
}

// [pass 1] The end of the pre-token that starts at i (GPT-2's alternatives, in their order).
size_t pretoken_end(const std::u32string& s, size_t i) {
    const size_t n = s.size();
    auto letter = [&](size_t k) { return k < n && unicode::is_letter(s[k]); };
    auto number = [&](size_t k) { return k < n && unicode::is_number(s[k]); };
    auto space = [&](size_t k) { return k < n && unicode::is_js_space(s[k]); };
    auto other = [&](size_t k) { return k < n && !space(k) && !letter(k) && !number(k); };
    if (s[i] == '\'') {  // 's 't 're 've 'm 'll 'd
        constexpr const char32_t* kSuffixes[] = {U"s", U"t", U"re", U"ve", U"m", U"ll", U"d"};
        for (const char32_t* suffix : kSuffixes) {
            const std::u32string_view x(suffix);
            if (s.compare(i + 1, x.size(), x) == 0) return i + 1 + x.size();
        }
    }
    const size_t after_space = s[i] == ' ' ? i + 1 : i;
    for (auto cls : {+[](const std::u32string& t, size_t k) { return k < t.size() && unicode::is_letter(t[k]); },
                     +[](const std::u32string& t, size_t k) { return k < t.size() && unicode::is_number(t[k]); }}) {
        if (cls(s, after_space)) {
            size_t j = after_space;
            while (cls(s, j)) ++j;
            return j;
        }
    }
    if (other(after_space)) {
        size_t j = after_space;
        while (other(j)) ++j;
        return j;
    }
    size_t j = i;  // \s+(?!\S), else \s+
    while (space(j)) ++j;
    if (j < n && j - i > 1) return j - 1;  // leave the last space to the next piece
    return j;
}

struct Bpe final : Tokenizer::Impl {
    std::array<std::string, 256> bytes = byte_symbols();
    std::unordered_map<std::string, int> ranks;  // "left right" → its line order

    using Impl::Impl;

    // [pass 3] Symbols of one pre-token merged by rank.
    void merge(std::vector<std::string>& symbols) const {
        while (symbols.size() > 1) {
            int best = INT_MAX;
            size_t at = 0;
            for (size_t k = 0; k + 1 < symbols.size(); ++k) {
                auto it = ranks.find(symbols[k] + " " + symbols[k + 1]);
                if (it != ranks.end() && it->second < best) best = it->second, at = k;
            }
            if (best == INT_MAX) return;
            const std::string left = symbols[at], right = symbols[at + 1];
            std::vector<std::string> merged;
            merged.reserve(symbols.size());
            for (size_t k = 0; k < symbols.size(); ++k) {
                if (k + 1 < symbols.size() && symbols[k] == left && symbols[k + 1] == right) {
                    merged.push_back(left + right);
                    ++k;
                } else {
                    merged.push_back(symbols[k]);
                }
            }
            symbols = std::move(merged);
        }
    }

    // The token's symbols back to bytes; the bytes read as UTF-8 (a bad byte as U+FFFD).
    std::string text(int id) const override {
        std::string raw;
        for (char32_t c : unicode::decode(vocab.tokens[static_cast<size_t>(id)])) {
            std::string symbol;
            unicode::append_utf8(symbol, c);
            const auto b = std::find(bytes.begin(), bytes.end(), symbol);
            if (b != bytes.end()) raw += static_cast<char>(b - bytes.begin());
            else raw += symbol;  // not from the byte alphabet (an added token): as it is
        }
        std::string out;
        for (char32_t c : unicode::decode(raw)) unicode::append_utf8(out, c);
        return out;
    }

    std::vector<int> encode(std::string_view text) const override {
        const std::u32string s = unicode::decode(text);
        std::vector<int> out;
        std::vector<std::string> symbols;
        for (size_t i = 0; i < s.size();) {
            const size_t end = pretoken_end(s, i);
            std::string utf8;
            for (size_t k = i; k < end; ++k) unicode::append_utf8(utf8, s[k]);
            symbols.clear();  // [pass 2] bytes as symbols
            for (unsigned char b : utf8) symbols.push_back(bytes[b]);
            merge(symbols);
            for (const std::string& sym : symbols) out.push_back(vocab.find(sym, -1));  // checked at load: never -1
            i = end;
        }
        return out;
    }
};

}  // namespace

std::shared_ptr<const Tokenizer::Impl> make_bpe(Vocab vocab, const std::vector<BpeMerge>& merges, const std::string& vocab_file,
                                                const std::string& merges_file) {
    auto bpe = std::make_shared<Bpe>(TokenizerKind::ByteLevelBpe, std::move(vocab));
    for (int b = 0; b < 256; ++b)
        if (!bpe->vocab.ids.count(bpe->bytes[static_cast<size_t>(b)]))
            throw ModelError(vocab_file, "", "lacks the token \"" + bpe->bytes[static_cast<size_t>(b)] + "\" of byte " +
                                                 std::to_string(b) + " (a byte-level BPE needs all 256)");
    for (size_t r = 0; r < merges.size(); ++r) {
        const BpeMerge& m = merges[r];
        if (!bpe->vocab.ids.count(m.left + m.right))
            throw ModelError(merges_file, "line " + std::to_string(m.line),
                             "\"" + m.left + " " + m.right + "\" makes \"" + m.left + m.right + "\", which " + vocab_file + " lacks");
        bpe->ranks.emplace(m.left + " " + m.right, static_cast<int>(r));  // the first of a repeated merge ranks
    }
    return bpe;
}

Tokenizer read_bpe(std::string_view vocab_json, const std::string& vocab_file, std::string_view merges_txt,
                   const std::string& merges_file) {
    nlohmann::json j = nlohmann::json::parse(vocab_json, nullptr, false);
    if (j.is_discarded()) throw ModelError(vocab_file, "", "malformed JSON");
    Vocab vocab = read_vocab_object(j, vocab_file, "");
    std::vector<BpeMerge> merges;
    int line_no = 0;
    for (size_t pos = 0; pos < merges_txt.size();) {
        size_t end = merges_txt.find('\n', pos);
        if (end == std::string_view::npos) end = merges_txt.size();
        std::string_view line = merges_txt.substr(pos, end - pos);
        pos = end + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
        const size_t space = line.find(' ');
        if (space == std::string_view::npos || space == 0 || space + 1 == line.size() || line.find(' ', space + 1) != std::string_view::npos)
            throw ModelError(merges_file, "line " + std::to_string(line_no), "expected two tokens separated by one space");
        merges.push_back({std::string(line.substr(0, space)), std::string(line.substr(space + 1)), line_no});
    }
    return Tokenizer(make_bpe(std::move(vocab), merges, vocab_file, merges_file));
}

}  // namespace attn
