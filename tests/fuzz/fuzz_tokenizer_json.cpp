// fuzz_tokenizer_json.cpp: libFuzzer target for tokenizer.json (tokenizer_json.cpp) and its regex
// engine (regex.cpp). The first byte chooses what the rest is (its value mod 3):
//   0: a tokenizer.json, a NUL, a text: read_tokenizer_json gives a ModelError naming the file,
//      or a tokenizer whose ids of the text are in range and the same twice, whose ids with
//      specials hold them as one run (nothing but the post-processor's ids around), and each of
//      whose ids has a label;
//   1: a regex pattern, a NUL, a text: the pattern is refused with std::invalid_argument, or its
//      matches lie in the text, in order, without overlap, each where find() finds it;
//   2: a text for a fixed tokenizer.json that uses most components (built once): ids in range,
//      the same twice, with the template's ids around them.
#include "files.hpp"
#include "regex.hpp"
#include "tokenizer.hpp"
#include "unicode.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace {

void require(bool ok) {
    if (!ok) __builtin_trap();
}

void check_ids(const attn::Tokenizer& t, std::string_view text) {
    const std::vector<int> ids = t.encode(text), with = t.encode_with_specials(text);
    require(ids == t.encode(text));
    for (int id : with) require(id >= 0 && id < t.size());
    require(ids.empty() || std::search(with.begin(), with.end(), ids.begin(), ids.end()) != with.end());
    if (!t.adds_specials()) require(with == ids);
    for (int id : ids) (void)t.text(id);
}

// Byte-level BPE over GPT-2's 256 byte symbols, a few merges, added tokens of every kind, and a
// chain of normalizers, pre-tokenizers and decoders.
attn::Tokenizer fixed() {
    nlohmann::json vocab = nlohmann::json::object();
    int n = 0, next = 0;
    for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        std::string s;
        attn::unicode::append_utf8(s, static_cast<char32_t>(printable ? b : 256 + n++));
        vocab[s] = next++;
    }
    for (const char* t : {"\xc4\xa0t", "he", "\xc4\xa0the", "in", "<s>"}) vocab[t] = next++;
    const nlohmann::json j = {
        {"added_tokens", {{{"id", 261}, {"content", "<s>"}, {"special", true}, {"normalized", false}, {"lstrip", false}, {"rstrip", false}, {"single_word", false}},
                          {{"id", 262}, {"content", "[m]"}, {"special", false}, {"normalized", true}, {"lstrip", true}, {"rstrip", true}, {"single_word", false}},
                          {{"id", 263}, {"content", "word"}, {"special", false}, {"normalized", true}, {"lstrip", false}, {"rstrip", false}, {"single_word", true}}}},
        {"normalizer", {{"type", "Sequence"}, {"normalizers", {{{"type", "NFKC"}}, {{"type", "Lowercase"}}, {{"type", "Replace"}, {"pattern", {{"Regex", "\\s{2,}"}}}, {"content", " "}},
                                                                {{"type", "StripAccents"}}, {{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}}}}}},
        {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", {
            {{"type", "Split"}, {"pattern", {{"Regex", "(?i:'s|'t)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}}, {"behavior", "Isolated"}, {"invert", false}},
            {{"type", "Digits"}, {"individual_digits", true}}, {{"type", "Punctuation"}, {"behavior", "MergedWithNext"}},
            {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
        {"post_processor", {{"type", "TemplateProcessing"}, {"single", {{{"SpecialToken", {{"id", "<s>"}}}}, {{"Sequence", {{"id", "A"}}}}}},
                            {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {261}}, {"tokens", {"<s>"}}}}}}}},
        {"decoder", {{"type", "Sequence"}, {"decoders", {{{"type", "ByteLevel"}}, {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"\xc4\xa0 t", "h e", "\xc4\xa0t he", "i n"}}, {"ignore_merges", true}}}};
    return attn::read_tokenizer_json(j.dump(), "fixed/tokenizer.json");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
    const size_t nul = rest.find('\0');
    const std::string_view first = rest.substr(0, nul), second = nul == std::string_view::npos ? "" : rest.substr(nul + 1);
    switch (data[0] % 3) {
        case 0:
            try {
                check_ids(attn::read_tokenizer_json(first, "f/tokenizer.json"), second);
            } catch (const attn::ModelError& e) {
                require(std::string_view(e.what()).starts_with("f/tokenizer.json: "));
            }
            break;
        case 1: {
            std::optional<attn::Regex> re;
            try {
                re.emplace(first);
            } catch (const std::invalid_argument&) {
                break;
            }
            const std::u32string text = attn::unicode::decode(second);
            size_t from = 0;
            for (const auto& [b, e] : re->find_all(text)) {
                require(b >= from && b <= e && e <= text.size());
                const auto m = re->find(text, from);
                require(m && m->first == b && m->second == e);
                from = e > b ? e : e + 1;
            }
            break;
        }
        default: {
            static const attn::Tokenizer t = fixed();  // the fuzzer's own process: built once
            check_ids(t, rest);
            require(t.adds_specials() && t.encode_with_specials(rest).front() == 261);
        }
    }
    return 0;
}
