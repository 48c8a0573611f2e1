// tokenizer_decoders.cpp: decoders, what makes a token's label (Tokenizer::text): tokenizer.json's,
// chosen by "type" from kDecoders, and the ones the older files use (GPT-2's bytes, SentencePiece's
// "▁", WordPiece's "##"). A label is one token as it reads in the middle of a text: decoders run
// on it alone, and the steps that only trim the start of a whole text (Strip, Metaspace's first
// "▁") are left out.
#include "tokenizer_impl.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace attn::tok {
namespace {

Decoder decoder_sequence(const Field& f) { return sequence_of<Decoder>(f, "decoders", read_decoder); }

Decoder decoder_byte_level(const Field&) { return byte_level_decoder(false); }

Decoder decoder_byte_fallback(const Field&) {
    return [](std::string& t) {  // "<0xE4>": the byte, alone not UTF-8: U+FFFD
        if (t.size() != 6 || t.rfind("<0x", 0) != 0 || t.back() != '>') return;
        const std::string hex = t.substr(3, 2);
        if (hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) return;
        const auto b = static_cast<unsigned char>(std::stoi(hex, nullptr, 16));
        t = b < 0x80 ? std::string(1, static_cast<char>(b)) : "\xef\xbf\xbd";
    };
}

Decoder decoder_metaspace(const Field& f) { return metaspace_decoder(one_char(f.at("replacement"))); }

Decoder decoder_replace(const Field& f) {
    const Normalizer r = replace_normalizer(read_pattern(f.at("pattern")), u32(f.at("content").str()));
    return [=](std::string& t) {
        Piece p{u32(t), true};
        r(p);
        t = utf8(p.text);
    };
}

Decoder decoder_wordpiece(const Field& f) { return wordpiece_decoder(f.at("prefix").str_or("##")); }

Decoder decoder_bpe(const Field& f) {
    const std::string suffix = f.at("suffix").str_or("</w>");
    return [=](std::string& t) {
        if (!suffix.empty() && t.size() >= suffix.size() && t.compare(t.size() - suffix.size(), suffix.size(), suffix) == 0)
            t = t.substr(0, t.size() - suffix.size()) + " ";
    };
}

Decoder decoder_none(const Field&) {  // Fuse, Strip: whole texts only
    return [](std::string&) {};
}

const TypeRow<Reader<Decoder>> kDecoders[] = {
    {"Sequence", decoder_sequence},
    {"ByteLevel", decoder_byte_level},
    {"ByteFallback", decoder_byte_fallback},
    {"Metaspace", decoder_metaspace},
    {"Replace", decoder_replace},
    {"WordPiece", decoder_wordpiece},
    {"BPEDecoder", decoder_bpe},
    {"Fuse", decoder_none},
    {"Strip", decoder_none},
};

}  // namespace

Decoder read_decoder(const Field& f) { return row_of(kDecoders, f).read(f); }

Decoder byte_level_decoder(bool keep_others) {
    return [keep_others, bytes = byte_chars()](std::string& t) {  // GPT-2's characters back to bytes, read as UTF-8
        std::string raw;
        for (char32_t c : u32(t)) {
            const auto b = std::find(bytes.begin(), bytes.end(), c);
            if (b != bytes.end()) raw += static_cast<char>(b - bytes.begin());
            else if (keep_others) raw += utf8(std::u32string(1, c));  // not from the byte alphabet: as it is
            else return;  // not all from the byte alphabet: the token as it is
        }
        t = utf8(u32(raw));
    };
}

Decoder metaspace_decoder(char32_t replacement) {
    return [=](std::string& t) {
        std::u32string s = u32(t);
        std::replace(s.begin(), s.end(), replacement, U' ');
        t = utf8(s);
    };
}

Decoder wordpiece_decoder(const std::string& prefix) {
    return [=](std::string& t) {
        if (t.size() > prefix.size() && t.rfind(prefix, 0) == 0) t = t.substr(prefix.size());
    };
}

}  // namespace attn::tok
