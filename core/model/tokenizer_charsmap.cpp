// tokenizer_charsmap.cpp: SentencePiece's precompiled charsmap (its normalizer's table, nmt_nfkc's)
// and the two normalizers that read it:
//   tokenizer.json's "Precompiled", as tokenizers runs it (spm_precompiled): on characters, one
//     grapheme cluster at a time, the shortest key that is a prefix of it
//   sentencepiece's own (normalizer.cc), for SentencePiece model files, on the text's bytes:
//     1. the longest key that is a prefix of the text replaced, again and again (a byte no key
//        starts and no UTF-8 either is U+FFFD)
//     2. white space runs become one space, leading and trailing ones go (remove_extra_whitespaces)
//     3. a "▁" in front (add_dummy_prefix); every space "▁" (escape_whitespaces)
//
// [SECTION] The charsmap
// [SECTION] Precompiled (tokenizer.json)
// [SECTION] sentencepiece's normalizer
#include "text.hpp"  // decode_utf8
#include "tokenizer_impl.hpp"
#include "unicode.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>

namespace attn::tok {
namespace {

// [SECTION] The charsmap -----------------------------------------------------------------------

// SentencePiece's precompiled charsmap (its normalizer's table, nmt_nfkc's): a uint32 size, a
// Darts double-array trie of UTF-8 keys, then NUL-terminated replacement strings the trie's
// values point into.
class Charsmap {
public:
    Charsmap() = default;
    Charsmap(const std::string& blob, const std::string& file) {
        if (blob.empty()) return;
        std::uint32_t size = 0;
        if (blob.size() < 4 || (std::memcpy(&size, blob.data(), 4), size % 4 != 0) || size > blob.size() - 4)
            throw ModelError(file, "normalizer_spec.precompiled_charsmap", "its trie's size is outside the charsmap");
        units_.resize(size / 4);
        std::memcpy(units_.data(), blob.data() + 4, size);
        strings_ = blob.substr(4 + size);
    }

    // The replacement of the longest prefix of `in` the trie has, and that prefix's length; or 0.
    size_t longest(std::string_view in, std::string_view& out) const { return search(in, out, false); }
    // The same for the shortest prefix (spm_precompiled's transform, in tokenizers).
    size_t shortest(std::string_view in, std::string_view& out) const { return search(in, out, true); }

private:
    size_t search(std::string_view in, std::string_view& out, bool first) const {
        if (units_.empty()) return 0;
        size_t node = 0, best = 0;
        std::uint32_t unit = units_[0];
        node ^= offset(unit);
        for (size_t i = 0; i < in.size(); ++i) {
            const auto c = static_cast<unsigned char>(in[i]);
            node ^= c;
            if (node >= units_.size()) break;
            unit = units_[node];
            if ((unit & ((1u << 31) | 0xFFu)) != c) break;  // label
            node ^= offset(unit);
            if (node >= units_.size()) break;
            if ((unit >> 8) & 1u) {  // has a leaf: a key ends here
                const std::uint32_t value = units_[node] & ((1u << 31) - 1);
                if (value < strings_.size()) {
                    const char* s = strings_.data() + value;
                    out = std::string_view(s, strnlen(s, strings_.size() - value));
                    best = i + 1;
                    if (first) break;
                }
            }
        }
        return best;
    }
    static size_t offset(std::uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }
    std::vector<std::uint32_t> units_;
    std::string strings_;
};


// [SECTION] Precompiled (tokenizer.json) -------------------------------------------------------

// Where extended grapheme clusters break (UAX #29, as unicode-segmentation), closely enough for
// the Precompiled normalizer: never before a mark, a joiner, a variation selector, an emoji
// modifier or tag; CR LF, Hangul syllable sequences, regional indicator pairs, ZWJ + emoji and
// Indic consonant + virama + consonant (GB9c) stay together.
bool grapheme_break(const std::u32string& s, size_t i, size_t cluster_start) {
    const char32_t a = s[i - 1], b = s[i];
    if (a == '\r' && b == '\n') return false;
    if (a == '\r' || a == '\n' || b == '\r' || b == '\n') return true;
    const auto kb = unicode::category(b);
    if (kb == unicode::Category::Mn || kb == unicode::Category::Mc || kb == unicode::Category::Me || b == 0x200C || b == 0x200D ||
        b == 0xFF9E || b == 0xFF9F || (b >= 0x1F3FB && b <= 0x1F3FF) || (b >= 0xE0020 && b <= 0xE007F))
        return false;
    auto jamo = [](char32_t c) {  // 'L', 'V', 'T', 'S' (LV), 'X' (LVT), or 0
        if ((c >= 0x1100 && c <= 0x115F) || (c >= 0xA960 && c <= 0xA97C)) return 'L';
        if ((c >= 0x1160 && c <= 0x11A7) || (c >= 0xD7B0 && c <= 0xD7C6)) return 'V';
        if ((c >= 0x11A8 && c <= 0x11FF) || (c >= 0xD7CB && c <= 0xD7FB)) return 'T';
        if (c >= 0xAC00 && c <= 0xD7A3) return (c - 0xAC00) % 28 == 0 ? 'S' : 'X';
        return '\0';
    };
    const char ja = jamo(a), jb = jamo(b);
    if (ja == 'L' && (jb == 'L' || jb == 'V' || jb == 'S' || jb == 'X')) return false;
    if ((ja == 'S' || ja == 'V') && (jb == 'V' || jb == 'T')) return false;
    if ((ja == 'X' || ja == 'T') && jb == 'T') return false;
    auto regional = [](char32_t c) { return c >= 0x1F1E6 && c <= 0x1F1FF; };
    if (regional(a) && regional(b)) {
        size_t run = 0;  // a pair joins: an odd number of indicators before b
        for (size_t k = i; k > cluster_start && regional(s[k - 1]); --k) ++run;
        return run % 2 == 0;
    }
    if (a == 0x200D && (unicode::category(b) == unicode::Category::So || (b >= 0x1F000 && b <= 0x1FAFF))) return false;
    auto virama = [](char32_t c) { return c == 0x94D || c == 0x9CD || c == 0xACD || c == 0xB4D || c == 0xC4D || c == 0xD4D; };
    if (kb == unicode::Category::Lo && b >= 0x900 && b <= 0xD7F)
        for (size_t k = i; k > cluster_start; --k) {
            if (virama(s[k - 1])) return false;
            if (!is_mark(s[k - 1]) && s[k - 1] != 0x200D) break;
        }
    return true;
}

// spm_precompiled's normalize, as tokenizers runs it: each grapheme cluster under 6 bytes
// replaced whole by the charsmap's value for the shortest key that is a prefix of it; a
// longer cluster character by character the same way.
void precompiled(const Charsmap& charsmap, Piece& p) {
    std::u32string out;
    const std::u32string& s = p.text;
    auto transform = [&](std::u32string_view chunk) {  // false: no key is a prefix of it
        const std::string bytes = utf8(chunk);
        std::string_view replacement;
        if (!charsmap.shortest(bytes, replacement)) return false;
        out += u32(replacement);
        return true;
    };
    for (size_t start = 0; start < s.size();) {
        size_t end = start + 1;
        while (end < s.size() && !grapheme_break(s, end, start)) ++end;
        const std::u32string_view cluster(s.data() + start, end - start);
        const size_t before = out.size();
        if (utf8(cluster).size() >= 6 || !transform(cluster))
            for (size_t k = 0; k < cluster.size(); ++k)
                if (!transform(cluster.substr(k, 1))) out += cluster[k];
        if (start == 0 && out.size() == before) p.at_start = false;
        start = end;
    }
    p.text = std::move(out);
}

}  // namespace

Normalizer read_precompiled(const Field& f) {
    const Field map = f.at("precompiled_charsmap");
    if (map.missing()) return [](Piece&) {};
    auto charsmap = std::make_shared<const Charsmap>(base64_decode(map.str(), f.file, map.path), f.file);
    return [charsmap](Piece& p) { precompiled(*charsmap, p); };
}

// [SECTION] sentencepiece's normalizer ---------------------------------------------------------

namespace {

constexpr const char* kSpmSpace = "\xe2\x96\x81";  // ▁

std::string spm_normalize(const SentencePieceNormalization& normalizer, const Charsmap& charsmap, std::string_view in) {
    const bool squeeze = normalizer.remove_extra_whitespaces;
    auto prefix = [&](std::string_view s, std::string_view& out) -> size_t {
        if (size_t n = charsmap.longest(s, out)) return n;
        size_t pos = 0;
        const char32_t c = decode_utf8(s, pos);
        out = c == 0xFFFD && pos == 1 ? std::string_view("\xef\xbf\xbd") : s.substr(0, pos);  // a bad byte: U+FFFD
        return pos;
    };
    std::string_view piece;
    while (squeeze && !in.empty()) {  // leading white space
        const size_t n = prefix(in, piece);
        if (piece != " ") break;
        in.remove_prefix(n);
    }
    std::string out;
    if (in.empty()) return out;
    bool prev_space = squeeze;
    const std::string space = normalizer.escape_whitespaces ? kSpmSpace : " ";
    if (normalizer.add_dummy_prefix) out += space;
    while (!in.empty()) {
        const size_t n = prefix(in, piece);
        while (prev_space && !piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
        if (!piece.empty()) {
            for (char c : piece) {
                if (c == ' ') out += space;
                else out += c;
            }
            prev_space = piece.back() == ' ';
        }
        in.remove_prefix(n);
        prev_space = prev_space && squeeze;
    }
    while (squeeze && out.size() >= space.size() && out.compare(out.size() - space.size(), space.size(), space) == 0)
        out.resize(out.size() - space.size());
    return out;
}

}  // namespace

ByteNormalizer sentencepiece_normalizer(const SentencePieceNormalization& n, const std::string& file) {
    auto charsmap = std::make_shared<const Charsmap>(n.charsmap, file);
    return [charsmap, n](std::string_view text) { return spm_normalize(n, *charsmap, text); };
}

}  // namespace attn::tok
