// fuzz_unigram.cpp: libFuzzer target for SentencePiece Unigram (tokenizer_unigram.cpp). The
// first byte chooses what the rest is:
//   even: text for a small model made here (pieces and scores, no charsmap): the ids are in
//         range and the same twice, two unknowns never follow each other, and text made of the
//         model's pieces is never unknown;
//   odd:  a SentencePiece model file: a ModelError naming it, or a tokenizer whose ids of a
//         fixed text are in range.
#include "files.hpp"
#include "tokenizer.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace {

void require(bool ok) {
    if (!ok) __builtin_trap();
}

// A ModelProto: pieces (piece = 1, score = 2, type = 3) and nothing else.
std::string model_proto() {
    auto varint = [](std::string& out, std::uint64_t v) {
        do {
            out += static_cast<char>((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
            v >>= 7;
        } while (v);
    };
    std::string out;
    auto piece = [&](const std::string& text, float score, int type) {
        std::string body;
        body += '\x0a';
        varint(body, text.size());
        body += text;
        body += '\x15';
        char f[4];
        std::memcpy(f, &score, 4);
        body.append(f, 4);
        body += '\x18';
        varint(body, static_cast<std::uint64_t>(type));
        out += '\x0a';
        varint(out, body.size());
        out += body;
    };
    piece("<unk>", 0, 2);
    piece("<s>", 0, 3);
    piece("</s>", 0, 3);
    const char* words[] = {"\xe2\x96\x81", "\xe2\x96\x81" "the", "\xe2\x96\x81" "rain", "\xe2\x96\x81" "cat", "a", "b", "c", "t", "h", "e",
                           "r", "i", "n", "\xe9\x9b\xa8", "\xe5\xa4\xa7"};
    float score = -1;
    for (const char* w : words) piece(w, score -= 0.5f, 1);
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
    if (data[0] % 2 == 0) {
        const attn::Tokenizer t = attn::read_sentencepiece(model_proto(), "m.spm");
        const std::vector<int> ids = t.encode(rest);
        require(ids == t.encode(rest));
        for (size_t i = 0; i < ids.size(); ++i) {
            require(ids[i] >= 0 && ids[i] < t.size() && ids[i] != 1 && ids[i] != 2);  // control pieces never match
            require(i == 0 || ids[i] != 0 || ids[i - 1] != 0);
        }
        std::string known;  // the bytes of rest mapped onto the model's letters
        for (char c : rest) known += "abcthe rin"[static_cast<unsigned char>(c) % 10];
        for (int id : t.encode(known)) require(id != 0);
        return 0;
    }
    try {
        const attn::Tokenizer t = attn::read_sentencepiece(rest, "f/m.spm");
        for (int id : t.encode("Hello, world! 你好 \xff  x"))
            require(id >= 0 && id < t.size());
    } catch (const attn::ModelError& e) {
        require(std::string_view(e.what()).starts_with("f/m.spm: "));
    }
    return 0;
}
