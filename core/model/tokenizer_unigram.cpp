// tokenizer_unigram.cpp: the Unigram word model, for tokenizer.json's "Unigram" and SentencePiece
// model files (Marian's source.spm / target.spm) alike, as tokenizers (models/unigram/model.rs)
// and sentencepiece 0.1.9x encode:
//   1. Viterbi: best[e], the segmentation of the word's first e bytes into pieces whose scores
//      sum highest; a character no piece starts with is the unknown piece (scored lowest − 10)
//   2. back from the end: the pieces, a run of unknown ones fused into one
//   3. ids: a piece's own; an unknown run tokenizers looks up (it may spell a piece), else its
//      bytes' <0xNN> tokens (byte_fallback), else the unknown id; sentencepiece: the unknown id
// What differs between the two is read into the model: sentencepiece sums scores as float, lets
// only normal and user-defined pieces match text (a user-defined piece scored by its length) and
// gives Marian's vocab.json's ids with that file.
//
// [SECTION] The model
// [SECTION] tokenizer.json's "Unigram"
// [SECTION] SentencePiece model files
#include "text.hpp"  // decode_utf8
#include "tokenizer_impl.hpp"
#include "unicode.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace attn::tok {
namespace {

// [SECTION] The model --------------------------------------------------------------------------

struct UnigramModel final : WordModel {
    struct Entry {
        double score = 0;
        int id = 0;            // the output id (in the pipeline's vocabulary)
        bool unknown = false;  // the unknown piece itself: fused with unknown neighbours
    };
    // The pieces the lattice may use, by their index here: tokenizer.json's every vocabulary
    // entry (`vocab` below `size`: own_pieces false), sentencepiece's in `own`.
    bool own_pieces = false;
    Vocab own;
    std::vector<Entry> entries;
    size_t longest = 0;  // bytes
    int unk = -1;
    double unk_score = 0;
    bool byte_fallback = false;
    bool float_sums = false;       // sentencepiece: scores summed as float
    bool look_up_unknown = true;   // tokenizers: an unknown run that spells a piece is that piece

    using WordModel::WordModel;

    double add(double a, double b) const { return float_sums ? static_cast<double>(static_cast<float>(a + b)) : a + b; }

    void encode(const std::string& word, std::vector<int>& out) const override {
        const Vocab& pieces = own_pieces ? own : vocab;
        const size_t n = word.size();
        struct Best {
            double score = 0;
            size_t begin = 0;
            int id = -1;  // −1: not reached
            bool unknown = false;
        };
        std::vector<Best> best(n + 1);  // [pass 1]
        best[0].id = 0;
        for (size_t begin = 0; begin < n;) {
            size_t end = begin;
            decode_utf8(word, end);
            const size_t one_char = end - begin;
            bool single = false;
            for (size_t len = 1; len <= longest && begin + len <= n; ++len) {
                const int k = pieces.find(std::string_view(word).substr(begin, len), -1);
                if (k < 0 || static_cast<size_t>(k) >= entries.size()) continue;
                const Entry& e = entries[static_cast<size_t>(k)];
                const double score = add(best[begin].score, e.score);
                Best& target = best[begin + len];
                if (target.id < 0 || score > target.score) target = {score, begin, e.id, e.unknown};
                single = single || len == one_char;
            }
            if (!single) {
                const double score = add(best[begin].score, unk_score);
                Best& target = best[begin + one_char];
                if (target.id < 0 || score > target.score) target = {score, begin, unk, true};
            }
            begin = end;
        }
        struct Found {
            size_t begin, end;
            int id;
            bool unknown;
        };
        std::vector<Found> found;  // [pass 2] last first
        for (size_t end = n; end > 0;) {
            const Best& b = best[end];
            if (b.unknown && !found.empty() && found.back().unknown) found.back().begin = b.begin;  // fused
            else found.push_back({b.begin, end, b.id, b.unknown});
            end = b.begin;
        }
        for (size_t i = found.size(); i-- > 0;) {  // [pass 3]
            const Found& f = found[i];
            if (!f.unknown || !look_up_unknown) {
                out.push_back(f.unknown ? unk : f.id);
                continue;
            }
            const std::string s = word.substr(f.begin, f.end - f.begin);
            const int id = find(s);
            if (id >= 0) out.push_back(id);
            else if (!(byte_fallback && byte_fallback_ids(*this, s, out))) out.push_back(unk);
        }
    }
};

// A reader of protobuf's wire format, enough for ModelProto.
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

// [SECTION] tokenizer.json's "Unigram" ---------------------------------------------------------

std::unique_ptr<WordModel> read_unigram_model(const Field& f, Vocab& vocab) {
    const Field v = f.at("vocab");
    if (v.list().empty()) v.fail("expected a list of [piece, score]");
    double min_score = std::numeric_limits<double>::infinity();
    vocab = Vocab();
    std::vector<double> scores;
    for (size_t i = 0; i < v.j.size(); ++i) {
        const Field e = v.at(i);
        if (!e.j.is_array() || e.j.size() != 2 || !e.j[0].is_string() || !e.j[1].is_number()) e.fail("expected [piece, score]");
        const double score = e.j[1].get<double>();
        if (!std::isfinite(score)) e.fail("not a finite score");
        vocab.add(e.j[0].get<std::string>());
        scores.push_back(score);
        min_score = std::min(min_score, score);
    }
    auto m = std::make_unique<UnigramModel>(vocab);
    // a duplicate piece: the vocabulary finds its last id, as token_to_ids in tokenizers
    const Field unk = f.at("unk_id");
    if (!unk.missing()) {
        const long long id = unk.integer();
        if (id < 0 || id >= static_cast<long long>(vocab.tokens.size())) unk.fail("expected the id of a piece");
        m->unk = static_cast<int>(id);
    } else {
        unk.fail("a Unigram model without unk_id is not supported");
    }
    m->unk_score = min_score - 10.0;
    m->byte_fallback = f.at("byte_fallback").flag(false);
    for (size_t i = 0; i < scores.size(); ++i) {
        m->entries.push_back({scores[i], static_cast<int>(i), static_cast<int>(i) == m->unk});
        m->longest = std::max(m->longest, vocab.tokens[i].size());
    }
    return m;
}

}  // namespace attn::tok

// [SECTION] SentencePiece model files ----------------------------------------------------------

namespace attn {

Tokenizer read_sentencepiece(std::string_view model_proto, const std::string& file, std::string_view vocab_json,
                             const std::string& vocab_file) {
    using namespace tok;
    struct SpmPiece {
        std::string piece;
        float score = 0;
        int type = 1;  // SentencePiece's: 1 normal, 2 unknown, 3 control, 4 user defined, 5 unused, 6 byte
    };
    enum PieceType { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };
    std::vector<SpmPiece> pieces;  // [pass 1] the model file
    SentencePieceNormalization normalizer;
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
            SpmPiece piece;
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
    // [pass 2] the pieces: the lattice's, their scores, the unknown piece (messages name Marian's
    // vocab.json when it gives the ids)
    const std::string& named = vocab ? vocab_file : file;
    const bool mapped = vocab.has_value();
    if (!mapped) {
        vocab = Vocab();
        for (const SpmPiece& p : pieces) vocab->add(p.piece);
    }
    auto p = std::make_shared<Tokenizer::Impl>(TokenizerKind::Unigram, std::move(*vocab));
    auto m = std::make_unique<UnigramModel>(p->vocab);
    int spm_unk = -1;
    float min_score = std::numeric_limits<float>::infinity(), max_score = -std::numeric_limits<float>::infinity();
    for (size_t i = 0; i < pieces.size(); ++i) {
        const SpmPiece& piece = pieces[i];
        if (piece.type < kNormal || piece.type > kByte)
            throw ModelError(named, "pieces[" + std::to_string(i) + "].type", "unknown piece type " + std::to_string(piece.type));
        if (!std::isfinite(piece.score)) throw ModelError(named, "pieces[" + std::to_string(i) + "].score", "not a finite number");
        if (piece.type == kUnknown && spm_unk < 0) spm_unk = static_cast<int>(i);
        if (piece.type == kNormal) min_score = std::min(min_score, piece.score), max_score = std::max(max_score, piece.score);
    }
    if (spm_unk < 0) throw ModelError(named, "pieces", "no piece is the unknown piece");
    if (!std::isfinite(min_score)) min_score = max_score = 0;
    m->unk = mapped ? p->vocab.find("<unk>", -1) : spm_unk;
    if (m->unk < 0) throw ModelError(named, "", "the vocabulary has no \"<unk>\"");
    m->unk_score = min_score - 10.0f;
    m->float_sums = true;
    m->look_up_unknown = false;
    m->own_pieces = true;
    for (size_t i = 0; i < pieces.size(); ++i) {
        const SpmPiece& piece = pieces[i];
        if (piece.type != kNormal && piece.type != kUserDefined) continue;  // control, unknown, unused and byte pieces never match text
        if (piece.piece.empty() || m->own.ids.count(piece.piece)) continue;  // a repeated piece: the first
        // sentencepiece's bonus for a user-defined piece: its length in characters × the best score − 0.1
        const float score = piece.type == kUserDefined ? static_cast<float>(unicode::decode(piece.piece).size()) * max_score - 0.1f : piece.score;
        const int id = mapped ? p->vocab.find(piece.piece, m->unk) : static_cast<int>(i);
        m->own.ids.emplace(piece.piece, static_cast<int>(m->own.tokens.size()));
        m->own.tokens.push_back(piece.piece);
        m->entries.push_back({score, id, false});
        m->longest = std::max(m->longest, piece.piece.size());
    }
    p->byte_normalizer = sentencepiece_normalizer(normalizer, named);
    p->model = std::move(m);
    p->decoder = metaspace_decoder(U'\u2581');
    return Tokenizer(std::move(p));
}

}  // namespace attn
