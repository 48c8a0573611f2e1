// fuzz_bpe.cpp: libFuzzer target for the byte-level BPE (tokenizer_bpe.cpp). The first byte
// chooses what the rest is:
//   even: text for a vocabulary of GPT-2's 256 byte symbols and a few merges made here; the ids
//         are in range, the same twice, and their tokens, read back through GPT-2's byte
//         alphabet, are the text's UTF-8 exactly (a bad byte as U+FFFD's three bytes);
//   odd:  vocab.json, a NUL, merges.txt: read_bpe gives a ModelError naming one of the files,
//         or a tokenizer whose ids of a fixed text are in range.
#include "files.hpp"
#include "text.hpp"
#include "tokenizer.hpp"
#include "unicode.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace {

void require(bool ok) {
    if (!ok) __builtin_trap();
}

struct Fixed {
    attn::Tokenizer tokenizer;
    std::map<std::string, int> byte_of;  // a byte symbol's UTF-8 → its byte
};

Fixed fixed() {
    nlohmann::json vocab = nlohmann::json::object();
    std::map<std::string, int> byte_of;
    int n = 0, next = 0;
    for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        std::string s;
        attn::unicode::append_utf8(s, static_cast<char32_t>(printable ? b : 256 + n++));
        vocab[s] = next++;
        byte_of[s] = b;
    }
    // "Ġ" (U+0120) is the space byte's symbol, "ä" (U+00E4) byte 0xE4's.
    const std::string merges = "#version: 0.2\n\xc4\xa0 t\nh e\n\xc4\xa0t he\ni n\n\xc4\xa0 a\n\xc3\xa4 \xc2\xbd\n";
    for (const char* t : {"\xc4\xa0t", "he", "\xc4\xa0" "the", "in", "\xc4\xa0" "a", "\xc3\xa4\xc2\xbd"}) vocab[t] = next++;
    return {attn::read_bpe(vocab.dump(), "vocab.json", merges, "merges.txt"), byte_of};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
    if (data[0] % 2 == 0) {
        static const Fixed f = fixed();  // the fuzzer's own process: built once
        const std::vector<int> ids = f.tokenizer.encode(rest);
        require(ids == f.tokenizer.encode(rest));
        std::string bytes;
        for (int id : ids) {
            require(id >= 0 && id < f.tokenizer.size());
            const std::u32string chars = attn::unicode::decode(f.tokenizer.token(id));
            for (char32_t c : chars) {
                std::string one;
                attn::unicode::append_utf8(one, c);
                auto it = f.byte_of.find(one);
                require(it != f.byte_of.end());
                bytes += static_cast<char>(it->second);
            }
        }
        std::string want;  // the text as valid UTF-8: each bad byte U+FFFD
        for (size_t pos = 0; pos < rest.size();) attn::unicode::append_utf8(want, attn::decode_utf8(rest, pos));
        require(bytes == want);
        return 0;
    }
    const size_t nul = rest.find('\0');
    const std::string_view vocab = rest.substr(0, nul), merges = nul == std::string_view::npos ? "" : rest.substr(nul + 1);
    try {
        const attn::Tokenizer t = attn::read_bpe(vocab, "f/vocab.json", merges, "f/merges.txt");
        for (int id : t.encode("Hello, world! 你好 \xff"))
            require(id >= 0 && id < t.size());
    } catch (const attn::ModelError& e) {
        const std::string_view what = e.what();
        require(what.starts_with("f/vocab.json: ") || what.starts_with("f/merges.txt: "));
    }
    return 0;
}
