// tokenizer_unigram.cpp: SentencePiece's Unigram model (Marian's source.spm / target.spm, or
// tokenizer.json's "Unigram"), as sentencepiece 0.1.9x encodes:
//   1. normalize: the longest match in the precompiled charsmap (a Darts double-array trie of
//      UTF-8 keys, nmt_nfkc's table) replaces each prefix of the text; white space runs become
//      one space, leading and trailing ones go; a "▁" in front (add_dummy_prefix); spaces "▁"
//   2. Viterbi: the segmentation into pieces whose scores sum highest; a character no piece
//      starts with is the unknown piece (scored lowest − 10), and a run of them one unknown
//   3. ids: the model's own, or with Marian's vocab.json the ids of the pieces there
#include "tokenizer_impl.hpp"
#include "text.hpp"  // decode_utf8
#include "unicode.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <limits>

namespace attn {
namespace {

constexpr const char* kSpace = "\xe2\x96\x81";  // ▁
constexpr float kUnkPenalty = 10.0f;

enum PieceType { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

struct Unigram final : Tokenizer::Impl {
    struct Piece {
        int id;     // in `vocab` (the output ids)
        float score;
        bool unknown;
    };
    std::unordered_map<std::string, Piece> pieces;  // what the lattice may use
    size_t longest_piece = 0;                        // bytes
    int unk = 0;                                     // the unknown piece's id
    float unk_score = 0;
    Charsmap charsmap;
    UnigramNormalizer normalizer;

    using Impl::Impl;

    std::string normalize(std::string_view in) const {
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
        const std::string space = normalizer.escape_whitespaces ? kSpace : " ";
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

    std::vector<int> encode(std::string_view text) const override {
        const std::string s = normalize(text);
        const size_t n = s.size();
        // [step 2] best[e]: the best score of s[0, e) and the piece that ends it.
        struct Best {
            float score = -std::numeric_limits<float>::infinity();
            size_t begin = 0;
            int id = -1;
            bool unknown = false;
        };
        std::vector<Best> best(n + 1);
        best[0].score = 0;
        for (size_t begin = 0; begin < n;) {
            size_t pos = begin;
            decode_utf8(s, pos);
            const size_t one_char = pos - begin;
            bool single = false;
            if (std::isfinite(best[begin].score)) {
                for (size_t len = 1; len <= longest_piece && begin + len <= n; ++len) {
                    auto it = pieces.find(s.substr(begin, len));
                    if (it == pieces.end()) continue;
                    const float score = best[begin].score + it->second.score;
                    if (score > best[begin + len].score) best[begin + len] = {score, begin, it->second.id, false};
                    single = single || len == one_char;
                }
                if (!single) {
                    const float score = best[begin].score + unk_score;
                    if (score > best[begin + one_char].score) best[begin + one_char] = {score, begin, unk, true};
                }
            }
            begin += one_char;
        }
        std::vector<const Best*> path;
        for (size_t end = n; end > 0; end = best[end].begin) path.push_back(&best[end]);
        std::vector<int> out;
        bool prev_unknown = false;
        for (auto it = path.rbegin(); it != path.rend(); ++it) {
            if ((*it)->unknown && prev_unknown) continue;  // a run of unknown characters: one unknown piece
            out.push_back((*it)->id);
            prev_unknown = (*it)->unknown;
        }
        return out;
    }
};

// [protobuf] A reader of the wire format, enough for ModelProto.
class Proto {
public:
    Proto(std::string_view bytes, const std::string& file, std::string where) : in_(bytes), file_(file), where_(std::move(where)) {}
    bool done() const { return in_.empty(); }
    // The next field's number and wire type.
    std::pair<std::uint32_t, int> key() {
        const std::uint64_t k = varint();
        return {static_cast<std::uint32_t>(k >> 3), static_cast<int>(k & 7)};
    }
    std::uint64_t varint() {
        std::uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (in_.empty()) fail("a number runs past the end");
            const auto b = static_cast<unsigned char>(in_.front());
            in_.remove_prefix(1);
            v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
            if (!(b & 0x80)) return v;
        }
        fail("a number longer than 10 bytes");
    }
    std::string_view bytes() {
        const std::uint64_t n = varint();
        if (n > in_.size()) fail("a field runs past the end");
        std::string_view s = in_.substr(0, static_cast<size_t>(n));
        in_.remove_prefix(static_cast<size_t>(n));
        return s;
    }
    float f32() {
        if (in_.size() < 4) fail("a number runs past the end");
        float v;
        std::memcpy(&v, in_.data(), 4);
        in_.remove_prefix(4);
        return v;
    }
    void skip(int wire) {
        if (wire == 0) varint();
        else if (wire == 1) take(8);
        else if (wire == 2) bytes();
        else if (wire == 5) take(4);
        else fail("wire type " + std::to_string(wire) + " is not protobuf's");
    }
    [[noreturn]] void fail(const std::string& what) const {
        throw ModelError(file_, where_, "not a SentencePiece model: " + what);
    }

private:
    void take(size_t n) {
        if (n > in_.size()) fail("a field runs past the end");
        in_.remove_prefix(n);
    }
    std::string_view in_;
    const std::string& file_;
    std::string where_;
};

}  // namespace

std::shared_ptr<const Tokenizer::Impl> make_unigram(std::vector<UnigramPiece> pieces, UnigramNormalizer normalizer,
                                                    std::optional<Vocab> vocab, const std::string& file) {
    Vocab own;
    for (const UnigramPiece& p : pieces) own.add(p.piece);
    const bool mapped = vocab.has_value();
    auto u = std::make_shared<Unigram>(TokenizerKind::Unigram, mapped ? std::move(*vocab) : std::move(own));
    int spm_unk = -1;
    float min_score = std::numeric_limits<float>::infinity(), max_score = -std::numeric_limits<float>::infinity();
    for (size_t i = 0; i < pieces.size(); ++i) {
        const UnigramPiece& p = pieces[i];
        if (p.type < kNormal || p.type > kByte) throw ModelError(file, "pieces[" + std::to_string(i) + "].type", "unknown piece type " + std::to_string(p.type));
        if (!std::isfinite(p.score)) throw ModelError(file, "pieces[" + std::to_string(i) + "].score", "not a finite number");
        if (p.type == kUnknown && spm_unk < 0) spm_unk = static_cast<int>(i);
        if (p.type == kNormal) min_score = std::min(min_score, p.score), max_score = std::max(max_score, p.score);
    }
    if (spm_unk < 0) throw ModelError(file, "pieces", "no piece is the unknown piece");
    if (!std::isfinite(min_score)) min_score = max_score = 0;
    const int vocab_unk = mapped ? u->vocab.find("<unk>", -1) : spm_unk;
    if (vocab_unk < 0) throw ModelError(file, "", "the vocabulary has no \"<unk>\"");
    u->unk = vocab_unk;
    u->unk_score = min_score - kUnkPenalty;
    for (size_t i = 0; i < pieces.size(); ++i) {
        const UnigramPiece& p = pieces[i];
        if (p.type != kNormal && p.type != kUserDefined) continue;  // control, unknown, unused and byte pieces never match text
        if (p.piece.empty()) continue;
        // sentencepiece's bonus for a user-defined piece: its length in characters × the best score − 0.1
        const float score = p.type == kUserDefined ? static_cast<float>(unicode::decode(p.piece).size()) * max_score - 0.1f : p.score;
        const int id = mapped ? u->vocab.find(p.piece, vocab_unk) : static_cast<int>(i);
        u->pieces.emplace(p.piece, Unigram::Piece{id, score, false});
        u->longest_piece = std::max(u->longest_piece, p.piece.size());
    }
    u->charsmap = Charsmap(normalizer.charsmap, file);
    u->normalizer = std::move(normalizer);
    return u;
}

Tokenizer read_sentencepiece(std::string_view model_proto, const std::string& file, std::string_view vocab_json,
                             const std::string& vocab_file) {
    std::vector<UnigramPiece> pieces;
    UnigramNormalizer normalizer;
    int model_type = 1;  // TrainerSpec's default: UNIGRAM
    Proto top(model_proto, file, "");
    while (!top.done()) {
        const auto [field, wire] = top.key();
        if (wire != 2) {
            top.skip(wire);
            continue;
        }
        const std::string_view body = top.bytes();
        if (field == 1) {  // SentencePiece { piece = 1; score = 2; type = 3 }
            Proto p(body, file, "pieces[" + std::to_string(pieces.size()) + "]");
            UnigramPiece piece;
            while (!p.done()) {
                const auto [f, w] = p.key();
                if (f == 1 && w == 2) piece.piece = std::string(p.bytes());
                else if (f == 2 && w == 5) piece.score = p.f32();
                else if (f == 3 && w == 0) piece.type = static_cast<int>(p.varint());
                else p.skip(w);
            }
            pieces.push_back(std::move(piece));
        } else if (field == 2) {  // TrainerSpec { model_type = 3 }
            Proto t(body, file, "trainer_spec");
            while (!t.done()) {
                const auto [f, w] = t.key();
                if (f == 3 && w == 0) model_type = static_cast<int>(t.varint());
                else t.skip(w);
            }
        } else if (field == 3) {  // NormalizerSpec { precompiled_charsmap = 2; add_dummy_prefix = 3; remove_extra_whitespaces = 4; escape_whitespaces = 5 }
            Proto n(body, file, "normalizer_spec");
            while (!n.done()) {
                const auto [f, w] = n.key();
                if (f == 2 && w == 2) normalizer.charsmap = std::string(n.bytes());
                else if (f == 3 && w == 0) normalizer.add_dummy_prefix = n.varint() != 0;
                else if (f == 4 && w == 0) normalizer.remove_extra_whitespaces = n.varint() != 0;
                else if (f == 5 && w == 0) normalizer.escape_whitespaces = n.varint() != 0;
                else n.skip(w);
            }
        }
    }
    if (model_type != 1)
        throw ModelError(file, "trainer_spec.model_type", "a " + std::string(model_type == 2 ? "BPE" : model_type == 3 ? "word" : model_type == 4 ? "char" : "unknown") +
                                                               " model; attnviz reads Unigram SentencePiece models");
    if (pieces.empty()) throw ModelError(file, "pieces", "not a SentencePiece model: no pieces");
    std::optional<Vocab> vocab;
    if (!vocab_json.empty()) {
        nlohmann::json j = nlohmann::json::parse(vocab_json, nullptr, false);
        if (j.is_discarded()) throw ModelError(vocab_file, "", "malformed JSON");
        vocab = read_vocab_object(j, vocab_file, "");
    }
    const std::string& named = vocab ? vocab_file : file;
    return Tokenizer(make_unigram(std::move(pieces), std::move(normalizer), std::move(vocab), named));
}

}  // namespace attn
