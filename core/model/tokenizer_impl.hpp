// tokenizer_impl.hpp: what the three kinds of tokenizer share (tokenizer_*.cpp), not for users
// of tokenizer.hpp.
#pragma once

#include "files.hpp"
#include "tokenizer.hpp"

#include <nlohmann/json_fwd.hpp>

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
