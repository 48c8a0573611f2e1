// test_strings.cpp: the UI's string table (web/strings.cpp) has both languages for every key.
#include "strings.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <initializer_list>

TEST_CASE("every UI string has English and Chinese text, in the order of Str") {
    CHECK(attn::string_table_in_order());
    int empty = 0;
    for (int k = 0; k < attn::kStrCount; ++k) {
        const auto key = static_cast<attn::Str>(k);
        for (attn::Lang lang : {attn::Lang::En, attn::Lang::Zh}) {
            const char* t = attn::text(key, lang);
            if (t == nullptr || std::strlen(t) == 0) {
                ++empty;
                MESSAGE("key " << k << " is empty in " << (lang == attn::Lang::En ? "en" : "zh"));
            }
        }
    }
    MESSAGE(attn::kStrCount << " keys checked, " << empty << " empty");
    CHECK(empty == 0);
}

TEST_CASE("tr follows the UI language") {
    attn::set_ui_language(attn::Lang::Zh);
    CHECK(std::strcmp(attn::tr(attn::Str::ViewHeatmap), "热力图") == 0);
    attn::set_ui_language(attn::Lang::En);
    CHECK(std::strcmp(attn::tr(attn::Str::ViewHeatmap), "Heatmap") == 0);
}
