// reference_cases.hpp: the cases tests/model/make_models.py writes into the build folder
// (ATTN_MODEL_REFS): random-weight checkpoints of every family with their PyTorch runs.
#pragma once

#include "files.hpp"
#include "transformer.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace attn::test {

// A case's model, loaded, its expected.json, and the input of its reference run.
struct ReferenceCase {
    std::string name;
    ModelConfig config;
    Model model;
    nlohmann::json expected;
    RunInput input;  // ids (marian: decoder_ids and encoder_ids)
};

// The cases cases.json lists under `root`, in its order; empty when it cannot be read.
inline std::vector<std::string> reference_case_names(const std::filesystem::path& root) {
    std::ifstream f(root / "cases.json");
    if (!f) return {};
    const nlohmann::json j = nlohmann::json::parse(f);
    std::vector<std::string> names;
    for (const nlohmann::json& c : j.is_object() ? j.at("cases") : j)
        names.push_back(c.is_string() ? c.get<std::string>() : c.at("case").get<std::string>());
    return names;
}

inline ReferenceCase load_reference_case(const std::filesystem::path& root, const std::string& name) {
    ReferenceCase c;
    c.name = name;
    const ModelFiles files = ModelFiles::from_folder((root / name).string());
    c.config = read_config(files.need("config.json").text(), files.shown("config.json"));
    c.model = ModelLoader(c.config, files).take();
    c.expected = nlohmann::json::parse(files.need("expected.json").text());
    if (c.config.encoder_decoder())
        c.input.ids = c.expected.at("decoder_ids").get<std::vector<int>>(), c.input.source_ids = c.expected.at("encoder_ids").get<std::vector<int>>();
    else
        c.input.ids = c.expected.at("ids").get<std::vector<int>>();
    return c;
}

}  // namespace attn::test
