// tokenizer_bpe.cpp: the BPE word model, for tokenizer.json's "BPE" and GPT-2's vocab.json +
// merges.txt alike, as Hugging Face's tokenizers (models/bpe/model.rs, word.rs) and, for GPT-2's
// files, gpt-3-encoder run it:
//   1. the word's characters (with continuing_subword_prefix after the first and
//      end_of_word_suffix on the last), each an id, else its bytes' <0xNN> tokens
//      (byte_fallback), else the unknown token (runs fused with fuse_unk)
//   2. the adjacent pair of lowest rank merged, leftmost first among equals, until none is left
//      (word.rs's merge_all, with a priority queue)
// GPT-2's files make the pipeline of byte-level BPE: GPT-2's split as gpt-3-encoder matches it,
// each byte as its character of GPT-2's alphabet, this model, and the bytes back for labels.
//
// [SECTION] The model
// [SECTION] tokenizer.json's "BPE"
// [SECTION] GPT-2's vocab.json and merges.txt
#include "tokenizer_impl.hpp"
#include "text.hpp"  // decode_utf8

#include <nlohmann/json.hpp>

#include <queue>

namespace attn::tok {
namespace {

// [SECTION] The model --------------------------------------------------------------------------

struct BpeModel final : WordModel {
    std::unordered_map<std::uint64_t, std::pair<int, int>> merges;  // (left id, right id) → (rank, merged id)
    int unk = -1;
    std::string prefix, suffix;
    bool byte_fallback = false, fuse_unk = false, ignore_merges = false;

    using WordModel::WordModel;
    static std::uint64_t pair_key(int a, int b) { return (static_cast<std::uint64_t>(a) << 32) | static_cast<std::uint32_t>(b); }

    void encode(const std::string& word, std::vector<int>& out) const override {
        if (ignore_merges)
            if (const int id = find(word); id >= 0) return out.push_back(id);
        std::vector<int> symbols;
        std::string affixed;
        int pending_unk = 0;  // characters in the unknown run not yet written
        size_t pos = 0;
        while (pos < word.size()) {  // [pass 1]
            size_t end = pos;
            decode_utf8(word, end);
            std::string_view s(word.data() + pos, end - pos);  // with the prefix and suffix where they go
            if ((pos > 0 && !prefix.empty()) || (end == word.size() && !suffix.empty()))
                s = affixed.assign(pos > 0 ? prefix : "").append(s).append(end == word.size() ? suffix : "");
            pos = end;
            if (const int id = find(s); id >= 0) {
                if (pending_unk) symbols.push_back(unk), pending_unk = 0;
                symbols.push_back(id);
                continue;
            }
            if (byte_fallback && byte_fallback_ids(*this, s, symbols)) continue;
            if (unk < 0) continue;  // no unknown token: the character is dropped, as tokenizers does
            if (pending_unk && !fuse_unk) symbols.push_back(unk);
            pending_unk = 1;
        }
        if (pending_unk) symbols.push_back(unk);
        merge_all(symbols);  // [pass 2]
        out.insert(out.end(), symbols.begin(), symbols.end());
    }

    void merge_all(std::vector<int>& ids) const {
        const size_t n = ids.size();
        if (n < 2) return;
        std::vector<int> prev(n), next(n);
        std::vector<bool> gone(n, false);
        for (size_t i = 0; i < n; ++i) prev[i] = static_cast<int>(i) - 1, next[i] = i + 1 < n ? static_cast<int>(i) + 1 : -1;
        struct Candidate {
            int rank, pos, merged;
            bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
        };
        std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
        auto offer = [&](int pos) {
            if (pos < 0 || next[static_cast<size_t>(pos)] < 0) return;
            const auto it = merges.find(pair_key(ids[static_cast<size_t>(pos)], ids[static_cast<size_t>(next[static_cast<size_t>(pos)])]));
            if (it != merges.end()) queue.push({it->second.first, pos, it->second.second});
        };
        for (size_t i = 0; i + 1 < n; ++i) offer(static_cast<int>(i));
        while (!queue.empty()) {
            const Candidate top = queue.top();
            queue.pop();
            const auto p = static_cast<size_t>(top.pos);
            if (gone[p] || next[p] < 0) continue;
            const auto r = static_cast<size_t>(next[p]);
            const auto it = merges.find(pair_key(ids[p], ids[r]));
            if (it == merges.end() || it->second.second != top.merged) continue;  // stale
            ids[p] = top.merged;
            gone[r] = true;
            next[p] = next[r];
            if (next[r] >= 0) prev[static_cast<size_t>(next[r])] = top.pos;
            offer(prev[p]);
            offer(top.pos);
        }
        size_t k = 0;
        for (size_t i = 0; i < n; ++i)
            if (!gone[i]) ids[k++] = ids[i];
        ids.resize(k);
    }
};

// Unigram as models/unigram/model.rs: Viterbi over the pieces' scores (every vocabulary entry a
// candidate); a character no piece starts with is the unknown piece, scored lowest − 10, and a
// run of them one unknown (fused), then its bytes' <0xNN> tokens with byte_fallback.

}  // namespace

// [SECTION] tokenizer.json's "BPE" -------------------------------------------------------------

std::unique_ptr<WordModel> read_bpe_model(const Field& f, Vocab& vocab) {
    vocab = read_vocab_object(f.at("vocab").j, f.file, f.at("vocab").path);
    if (!f.at("dropout").missing() && f.at("dropout").number() != 0) f.at("dropout").fail("BPE dropout is not supported (it is random)");
    auto m = std::make_unique<BpeModel>(vocab);
    m->unk = unk_token_id(f.at("unk_token"), vocab);
    m->prefix = f.at("continuing_subword_prefix").str_or("");
    m->suffix = f.at("end_of_word_suffix").str_or("");
    m->byte_fallback = f.at("byte_fallback").flag(false);
    m->fuse_unk = f.at("fuse_unk").flag(false);
    m->ignore_merges = f.at("ignore_merges").flag(false);
    const Field merges = f.at("merges");
    const Json& list = merges.missing() ? Json::array() : merges.list();
    m->merges.reserve(list.size());
    std::string a, b;
    for (size_t i = 0; i < list.size(); ++i) {
        const Json& j = list[i];
        auto e = [&] { return merges.at(i); };  // its path, for a message only: half a million merges
        if (j.is_string()) {  // "a b"
            const std::string& s = j.get_ref<const std::string&>();
            const size_t space = s.find(' ');
            if (space == std::string::npos) e().fail("expected two tokens separated by a space");
            a.assign(s, 0, space), b.assign(s, space + 1);
        } else if (j.is_array() && j.size() == 2 && j[0].is_string() && j[1].is_string()) {  // ["a", "b"]
            a = j[0].get_ref<const std::string&>(), b = j[1].get_ref<const std::string&>();
        } else {
            e().fail("expected \"a b\" or [\"a\", \"b\"]");
        }
        const int ia = vocab.find(a, -1), ib = vocab.find(b, -1);
        if (ia < 0 || ib < 0) e().fail("\"" + (ia < 0 ? a : b) + "\" is not in the vocabulary");
        if (b.size() < m->prefix.size() || b.compare(0, m->prefix.size(), m->prefix) != 0)
            if (!m->prefix.empty()) e().fail("\"" + b + "\" lacks continuing_subword_prefix");
        a.append(b, m->prefix.size());  // the merged token
        const int id = vocab.find(a, -1);
        if (id < 0) e().fail("makes \"" + a + "\", which the vocabulary lacks");
        m->merges[BpeModel::pair_key(ia, ib)] = {static_cast<int>(i), id};  // a repeated merge: the last one's rank
    }
    return m;
}

}  // namespace attn::tok

// [SECTION] GPT-2's vocab.json and merges.txt --------------------------------------------------

namespace attn {

Tokenizer read_bpe(std::string_view vocab_json, const std::string& vocab_file, std::string_view merges_txt,
                   const std::string& merges_file) {
    using namespace tok;
    nlohmann::json j = nlohmann::json::parse(vocab_json, nullptr, false);
    if (j.is_discarded()) throw ModelError(vocab_file, "", "malformed JSON");
    Vocab vocab = read_vocab_object(j, vocab_file, "");
    struct Merge {
        std::string left, right;
        int line = 0;
    };
    std::vector<Merge> merges;  // [pass 1] the lines
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
    const std::array<char32_t, 256> bytes = byte_chars();  // [pass 2] the byte alphabet, all of it
    for (int b = 0; b < 256; ++b) {
        const std::string symbol = utf8(std::u32string(1, bytes[static_cast<size_t>(b)]));
        if (!vocab.ids.count(symbol))
            throw ModelError(vocab_file, "", "lacks the token \"" + symbol + "\" of byte " + std::to_string(b) + " (a byte-level BPE needs all 256)");
    }
    auto p = std::make_shared<Tokenizer::Impl>(TokenizerKind::ByteLevelBpe, std::move(vocab));
    auto m = std::make_unique<BpeModel>(p->vocab);
    for (size_t rank = 0; rank < merges.size(); ++rank) {  // [pass 3] the merges by their ids
        const Merge& merge = merges[rank];
        const int merged = m->find(merge.left + merge.right);
        if (merged < 0)
            throw ModelError(merges_file, "line " + std::to_string(merge.line), "\"" + merge.left + " " + merge.right + "\" makes \"" +
                                                                                  merge.left + merge.right + "\", which " + vocab_file + " lacks");
        const int a = m->find(merge.left), b = m->find(merge.right);  // a side the vocabulary lacks: never in a word
        if (a >= 0 && b >= 0) m->merges.emplace(BpeModel::pair_key(a, b), std::pair(static_cast<int>(rank), merged));  // repeated: the first ranks
    }
    p->model = std::move(m);
    p->pre_tokenizer = gpt2_split();
    p->decoder = byte_level_decoder(true);
    return Tokenizer(std::move(p));
}

}  // namespace attn
