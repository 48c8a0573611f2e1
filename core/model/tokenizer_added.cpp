// tokenizer_added.cpp: tokenizer.json's added tokens, as tokenizers' added_vocabulary.rs finds
// them: a trie of their contents, matched leftmost and longest first ("lstrip" / "rstrip" take
// the white space beside them into the token, "single_word" only between non-word characters);
// the pipeline (tokenizer.cpp) looks for those not "normalized" in the raw text, the others in
// the normalized text.
#include "tokenizer_impl.hpp"
#include "unicode.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace attn::tok {

void AddedMatcher::add(const AddedToken& t) {
    size_t node = 0;
    for (char32_t c : t.content) {
        auto& children = nodes_[node].children;
        auto it = children.find(c);
        if (it == children.end()) {
            nodes_.push_back({});
            it = nodes_[node].children.emplace(c, nodes_.size() - 1).first;
        }
        node = it->second;
    }
    nodes_[node].token = static_cast<int>(tokens_.size());
    tokens_.push_back(t);
}

void AddedMatcher::split(const Piece& p, const std::function<void(Piece)>& emit_text, const std::function<void(int)>& emit_id) const {
    if (tokens_.empty()) {  // none to find
        if (!p.text.empty()) emit_text(p);
        return;
    }
    const std::u32string& s = p.text;
    size_t done = 0;  // text before this was written
    for (size_t i = 0; i < s.size();) {
        size_t node = 0, match_end = 0;
        int match = -1;
        for (size_t k = i; k < s.size(); ++k) {
            const auto it = nodes_[node].children.find(s[k]);
            if (it == nodes_[node].children.end()) break;
            node = it->second;
            if (nodes_[node].token >= 0) match = nodes_[node].token, match_end = k + 1;
        }
        if (match < 0) {
            ++i;
            continue;
        }
        const AddedToken& t = tokens_[static_cast<size_t>(match)];
        size_t start = i, stop = match_end;
        if (t.single_word) {
            const bool before = start == 0 || !is_word_char(s[start - 1]);
            const bool after = stop == s.size() || !is_word_char(s[stop]);
            if (!before || !after) {  // not this token here: the search goes on after it
                i = match_end;
                continue;
            }
        }
        if (t.lstrip)
            while (start > done && unicode::is_white_space(s[start - 1])) --start;
        if (t.rstrip)
            while (stop < s.size() && unicode::is_white_space(s[stop])) ++stop;
        if (start > done) emit_text(Piece{s.substr(done, start - done), p.at_start && done == 0});
        emit_id(t.id);
        done = i = stop;
    }
    if (done < s.size()) emit_text(Piece{s.substr(done), p.at_start && done == 0});
}

// The vocabulary: the model's, then the added tokens that it lacks, with the ids tokenizers
// gives them (added_vocabulary.rs add_tokens: the model's id for a token it has, else the next
// free id; the file's "id" is not read).
std::vector<AddedToken> read_added_tokens(const Field& list, Vocab& vocab, const Normalizer& normalizer) {
    std::vector<AddedToken> out;
    if (list.missing()) return out;
    std::unordered_map<std::string, size_t> by_content;
    const size_t model_size = vocab.tokens.size();
    for (size_t i = 0; i < list.list().size(); ++i) {
        const Field f = list.at(i);
        const std::string content = f.at("content").str();
        if (content.empty()) continue;
        AddedToken t;
        t.special = f.at("special").flag(false);
        t.single_word = f.at("single_word").flag(false);
        t.lstrip = f.at("lstrip").flag(false);
        t.rstrip = f.at("rstrip").flag(false);
        t.normalized = f.at("normalized").flag(!t.special);
        t.id = vocab.find(content, -1);
        if (const auto it = by_content.find(content); it != by_content.end()) {
            t.id = out[it->second].id;  // the same content again: its settings replace the first's
            out[it->second] = t;
        } else {
            if (t.id < 0) {
                t.id = static_cast<int>(std::max(vocab.tokens.size(), model_size));
                vocab.add(content);
            }
            by_content[content] = out.size();
            out.push_back(t);
        }
        AddedToken& kept = out[by_content[content]];
        kept.content = u32(content);
        if (kept.normalized && normalizer) {
            Piece p{kept.content, true};
            normalizer(p);
            kept.content = p.text;
        }
    }
    return out;
}

}  // namespace attn::tok
