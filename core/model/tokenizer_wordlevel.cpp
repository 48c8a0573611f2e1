// tokenizer_wordlevel.cpp: the WordLevel word model (tokenizer.json's "WordLevel", models/wordlevel):
// a word is its vocabulary entry's id, else the unknown token's (none: nothing).
#include "tokenizer_impl.hpp"

#include <nlohmann/json.hpp>

namespace attn::tok {
namespace {

struct WordLevelModel final : WordModel {
    int unk = -1;
    using WordModel::WordModel;
    void encode(const std::string& word, std::vector<int>& out) const override {
        const int id = find(word);
        if (id >= 0 || unk >= 0) out.push_back(id >= 0 ? id : unk);
    }
};

}  // namespace

std::unique_ptr<WordModel> read_wordlevel_model(const Field& f, Vocab& vocab) {
    const Field unk_token = f.at("unk_token");
    vocab = read_vocab_object(f.at("vocab").j, f.file, f.at("vocab").path);
    auto m = std::make_unique<WordLevelModel>(vocab);
    m->unk = unk_token_id(unk_token, vocab);
    return m;
}

}  // namespace attn::tok
