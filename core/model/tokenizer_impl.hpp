// tokenizer_impl.hpp: what the three kinds of tokenizer share (tokenizer_*.cpp), not for users
// of tokenizer.hpp.
#pragma once

#include "files.hpp"
#include "tokenizer.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attn {

// Ids and their tokens.
struct Vocab {
    std::vector<std::string> tokens;              // by id
    std::unordered_map<std::string, int> ids;     // by token (a duplicate token: its last id)

    void add(std::string token) {  // with the next id
        ids[token] = static_cast<int>(tokens.size());
        tokens.push_back(std::move(token));
    }
    int find(const std::string& token, int otherwise) const {
        auto it = ids.find(token);
        return it == ids.end() ? otherwise : it->second;
    }
};

struct Tokenizer::Impl {
    TokenizerKind kind;
    Vocab vocab;

    Impl(TokenizerKind k, Vocab v) : kind(k), vocab(std::move(v)) {}
    virtual ~Impl() = default;
    virtual std::vector<int> encode(std::string_view text) const = 0;  // never throws
    virtual std::string text(int id) const;  // Tokenizer::text; WordPiece's and Unigram's here
    virtual std::vector<int> encode_with_specials(std::string_view text) const { return encode(text); }
    virtual bool adds_specials() const { return false; }
};

// Base64 text's bytes (tokenizer.json's precompiled_charsmap); `where` names it in messages.
std::string base64_decode(std::string_view text, const std::string& file, const std::string& where);

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

// The tokens of a {"token": id, …} object (vocab.json, tokenizer.json's BPE and WordPiece
// vocabularies): ids must be 0 … n − 1, each once. `where` names the object in messages.
Vocab read_vocab_object(const nlohmann::json& vocab, const std::string& file, const std::string& where);

// The tokenizer of each kind from its parts (tokenizer_bpe.cpp, tokenizer_wordpiece.cpp,
// tokenizer_unigram.cpp); the readers of tokenizer.hpp and of tokenizer.json call them.
struct BpeMerge {
    std::string left, right;
    int line = 0;  // for messages
};
std::shared_ptr<const Tokenizer::Impl> make_bpe(Vocab vocab, const std::vector<BpeMerge>& merges,
                                                const std::string& vocab_file, const std::string& merges_file);
std::shared_ptr<const Tokenizer::Impl> make_wordpiece(Vocab vocab, const WordPieceOptions& options,
                                                      const std::string& file);
struct UnigramPiece {
    std::string piece;
    float score = 0;
    int type = 1;  // SentencePiece's: 1 normal, 2 unknown, 3 control, 4 user defined, 5 unused, 6 byte
};
struct UnigramNormalizer {
    std::string charsmap;  // the precompiled charsmap (may be empty: no normalization)
    bool add_dummy_prefix = true, remove_extra_whitespaces = true, escape_whitespaces = true;
};
// `vocab` (Marian's vocab.json) or nullopt: then the pieces' own ids.
std::shared_ptr<const Tokenizer::Impl> make_unigram(std::vector<UnigramPiece> pieces, UnigramNormalizer normalizer,
                                                    std::optional<Vocab> vocab, const std::string& file);

}  // namespace attn
