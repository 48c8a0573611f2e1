// tokenizer_post_processors.cpp: tokenizer.json's post-processors, chosen by "type" from
// kPostProcessors: the special tokens encode_with_specials puts around a text's ids
// (tokenizer_impl.hpp). Only what a single text gets: no pairs, no type ids, no offsets.
#include "tokenizer_impl.hpp"

#include <nlohmann/json.hpp>

namespace attn::tok {
namespace {

int token_id(const Field& f, const Vocab& vocab) {  // ["[CLS]", 101] (BertProcessing, RobertaProcessing)
    if (!f.j.is_array() || f.j.size() != 2) f.fail("expected [token, id]");
    const long long id = f.at(1).integer();
    if (id < 0 || id >= static_cast<long long>(vocab.tokens.size())) f.at(1).fail("not an id of the vocabulary");
    return static_cast<int>(id);
}

PostProcessor post_processor_sequence(const Field& f, const Vocab& vocab) {
    return sequence_of<PostProcessor>(f, "processors", read_post_processor, vocab);
}

PostProcessor byte_level_offsets(const Field&, const Vocab&) { return [](std::vector<int>&) {}; }  // offsets only

PostProcessor bert_processing(const Field& f, const Vocab& vocab) {  // BertProcessing, RobertaProcessing
    const int cls = token_id(f.at("cls"), vocab), sep = token_id(f.at("sep"), vocab);
    return [=](std::vector<int>& ids) {
        ids.insert(ids.begin(), cls);
        ids.push_back(sep);
    };
}

// "single": [{"SpecialToken": {"id": "<bos>"}}, {"Sequence": {"id": "A"}}]: the ids of each
// special token from "special_tokens", the sequence in its place
PostProcessor template_processing(const Field& f, const Vocab& vocab) {
    const Field single = f.at("single"), specials = f.at("special_tokens");
    std::vector<int> before, after;
    bool seen = false;
    for (size_t i = 0; i < single.list().size(); ++i) {
        const Field item = single.at(i);
        if (item.j.is_object() && item.j.contains("Sequence")) {
            if (item.at("Sequence").at("id").str() != "A") item.at("Sequence").at("id").fail("expected \"A\" in a single template");
            seen = true;
            continue;
        }
        const Field special = item.at("SpecialToken");
        if (special.missing()) item.fail("expected {\"SpecialToken\": …} or {\"Sequence\": …}");
        const std::string name = special.at("id").str();
        const Field entry = specials.at(name);
        if (entry.missing()) special.at("id").fail("\"" + name + "\" is not in special_tokens");
        const Field ids = entry.at("ids");
        for (size_t k = 0; k < ids.list().size(); ++k) {
            const long long id = ids.at(k).integer();
            if (id < 0 || id >= static_cast<long long>(vocab.tokens.size())) ids.at(k).fail("not an id of the vocabulary");
            (seen ? after : before).push_back(static_cast<int>(id));
        }
    }
    if (!seen) single.fail("has no {\"Sequence\": {\"id\": \"A\"}}");
    return [=](std::vector<int>& ids) {
        ids.insert(ids.begin(), before.begin(), before.end());
        ids.insert(ids.end(), after.begin(), after.end());
    };
}

using PostProcessorRead = PostProcessor (*)(const Field&, const Vocab&);
const TypeRow<PostProcessorRead> kPostProcessors[] = {
    {"Sequence", post_processor_sequence},
    {"ByteLevel", byte_level_offsets},
    {"BertProcessing", bert_processing},
    {"RobertaProcessing", bert_processing},
    {"TemplateProcessing", template_processing},
};

}  // namespace

PostProcessor read_post_processor(const Field& f, const Vocab& vocab) { return row_of(kPostProcessors, f).read(f, vocab); }

}  // namespace attn::tok
