// builtin.cpp: see builtin.hpp. The files themselves are in the generated builtin_files.cpp.
#include "builtin.hpp"

#include <filesystem>

namespace attn {

// [SECTION] The list -------------------------------------------------------------------------

namespace {
constexpr const char* kGpt2Files[] = {"config.json", "model.safetensors", "vocab.json", "merges.txt"};
constexpr const char* kMarianFiles[] = {"config.json", "model.safetensors", "vocab.json", "source.spm", "target.spm"};
constexpr const char* kLlamaFiles[] = {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"};
constexpr const char* kVitFiles[] = {"config.json", "model.safetensors", "preprocessor_config.json", "example-0.png",
                                     "example-1.png", "example-2.png", "example-3.png", "example-4.png", "example-5.png",
                                     "example-6.png", "example-7.png", "example-8.png", "example-9.png"};
}  // namespace

std::span<const BuiltinModel> builtin_models() {
    static constexpr BuiltinModel kModels[] = {
        {"tiny-lm", "gpt2", "a 4-layer GPT-2 trained here on English and Chinese text from Debian packages (docs/MODELS.md)",
         kGpt2Files},
        {"tiny-circuits", "llama",
         "a 2-layer Llama trained here whose layer-1 previous-token head and layer-2 induction heads are as clear as in "
         "the papers; English and Chinese (docs/MODELS.md)",
         kLlamaFiles},
        {"tiny-translator", "marian",
         "a Marian encoder-decoder trained here to translate numbers and dates between English, Chinese and digits "
         "(docs/MODELS.md)",
         kMarianFiles},
        {"tiny-vit", "vit",
         "a 4-layer ViT trained here to read a digit drawn in one of Debian's fonts on a cluttered 32 × 32 picture; its "
         "[CLS] heads look at the digit's strokes (docs/MODELS.md)",
         kVitFiles},
    };
    return kModels;
}

const BuiltinModel* find_builtin(std::string_view name) {
    for (const BuiltinModel& m : builtin_models())
        if (name == m.name) return &m;
    return nullptr;
}

// [SECTION] Their files ----------------------------------------------------------------------

std::optional<ModelFiles> builtin_files(std::string_view name) {
    if (!find_builtin(name)) return std::nullopt;
    ModelFiles out;
    out.folder = std::string(name);
    for (const BuiltinFile& f : builtin_model_files())
        if (name == f.model)
            out.files[f.name] = FileBytes::borrow(f.begin, static_cast<std::size_t>(f.end - f.begin));
    if (out.files.empty()) return std::nullopt;
    return out;
}

ModelFiles folder_or_builtin(const std::string& model) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(model, ec)) return ModelFiles::from_gguf(model);  // a .gguf, or said not to be
    if (std::filesystem::exists(model, ec)) return ModelFiles::from_folder(model);
    if (std::optional<ModelFiles> files = builtin_files(model)) return std::move(*files);
    throw ModelError(model, "", "no such folder, nor a built-in model (attnviz run --list names them), nor a Hub id (ORG/NAME[@REVISION])");
}

}  // namespace attn
