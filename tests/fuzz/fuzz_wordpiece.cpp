// fuzz_wordpiece.cpp: libFuzzer target for BERT's WordPiece (tokenizer_wordpiece.cpp). The first
// byte chooses what the rest is:
//   even: text for a small vocabulary (cased or not, by the byte's second bit): the ids are in
//         range and the same twice; " cat" after it adds exactly "cat" (a space ends a word);
//         words the vocabulary spells are found;
//   odd:  a vocab.txt: a ModelError naming it, or a tokenizer whose ids of a fixed text are in range.
#include "files.hpp"
#include "tokenizer.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

void require(bool ok) {
    if (!ok) __builtin_trap();
}

const char kVocab[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\ncat\nsat\n##s\n##ing\na\nb\nc\n##a\n##b\n##c\n,\n.\n我\n你\nrain\n";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
    if (data[0] % 2 == 0) {
        attn::WordPieceOptions o;
        o.lower_case = o.strip_accents = (data[0] & 2) != 0;
        const attn::Tokenizer t = attn::read_wordpiece(kVocab, "vocab.txt", o);
        const std::vector<int> ids = t.encode(rest);
        require(ids == t.encode(rest));
        for (int id : ids) require(id >= 0 && id < t.size());
        // A space ends every word: what follows it cannot change the tokens before it.
        std::vector<int> more = ids;
        more.push_back(5);  // "cat"
        require(t.encode(std::string(rest) + " cat") == more);
        const std::vector<int> words = t.encode("the cats sat, raining");
        require(words == std::vector<int>({4, 5, 7, 6, 15, 19, 8}));
        return 0;
    }
    try {
        const attn::Tokenizer t = attn::read_wordpiece(rest, "f/vocab.txt", {});
        for (int id : t.encode("Hello, world! 你好 caf\xc3\xa9 \xff"))
            require(id >= 0 && id < t.size());
    } catch (const attn::ModelError& e) {
        require(std::string_view(e.what()).starts_with("f/vocab.txt: "));
    }
    return 0;
}
