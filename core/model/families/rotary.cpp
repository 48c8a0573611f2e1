// rotary.cpp: the rotation as config.json states it, in both of its forms (family.hpp's
// read_rope), for every family with rotary positions.
//
//   transformers 5   "rope_parameters": {"rope_type": "yarn", "rope_theta": 150000, "factor": 32, …}
//                    or one object per layer type: {"full_attention": {…}, "sliding_attention": {…}}
//   before           "rope_theta": 500000, "rope_scaling": {"rope_type": "llama3", "factor": 8, …}
//
// Each rope type reads the fields transformers' validation lists for it (modeling_rope_utils.py);
// any other field in its object is refused with the file and the field named, never ignored: a
// field attnviz does not read would change the positions the figure shows.
//
// [SECTION] The rope types and their fields
// [SECTION] One rotation
// [SECTION] read_rope
#include "family.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <string_view>

namespace attn {

namespace {

// [SECTION] The rope types and their fields ------------------------------------------------------

struct RopeTypeDef {
    const char* name;
    Rope::Type type;
    std::string_view fields[8];  // what the type reads besides rope_type / type, rope_theta, partial_rotary_factor
};

constexpr RopeTypeDef kRopeTypes[] = {
    {"default", Rope::Type::Default, {}},
    {"linear", Rope::Type::Linear, {"factor"}},
    {"dynamic", Rope::Type::Dynamic, {"factor"}},
    {"llama3", Rope::Type::Llama3, {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}},
    {"yarn", Rope::Type::Yarn,
     {"factor", "original_max_position_embeddings", "attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim",
      "truncate"}},
    {"longrope", Rope::Type::LongRope,
     {"short_factor", "long_factor", "original_max_position_embeddings", "attention_factor", "factor"}},
};

constexpr std::string_view kCommonFields[] = {"rope_type", "type", "rope_theta", "partial_rotary_factor"};

std::string rope_type_names() {
    std::string s;
    for (const RopeTypeDef& t : kRopeTypes) (s += s.empty() ? "" : ", ") += t.name;
    return s;
}

bool reads(const RopeTypeDef& t, std::string_view field) {
    for (std::string_view f : kCommonFields)
        if (f == field) return true;
    for (std::string_view f : t.fields)
        if (f == field) return true;
    return false;
}

// [SECTION] One rotation -----------------------------------------------------------------------------

// A field of the rotation: in its own object `s` (rope_parameters or one of its layer types),
// else at the top of config.json (transformers 5 moves rope_theta and partial_rotary_factor into
// rope_parameters; the older form keeps them at the top).
const ConfigFields& where(const ConfigFields& top, const ConfigFields& s, const std::string& field) {
    const bool at_top = top.has(field);  // looked at in both places: neither is refused as unread
    return s.has(field) || !at_top ? s : top;
}

// One rotation from `s`, the object holding its type and fields (rope_parameters, one of its
// layer types, the older rope_scaling, or an empty object: no scaling).
Rope read_one(const ConfigFields& top, const ConfigFields& s, const ModelConfig& c, double default_theta) {
    Rope r;
    if (s.has("rope_type") && s.has("type") && s.text("rope_type", "") != s.text("type", ""))
        s.fail("type", "\"" + s.text("type", "") + "\" differs from rope_type \"" + s.text("rope_type", "") + "\"");
    const std::string field = s.has("rope_type") ? "rope_type" : "type";
    // qwen2_5_vl's M-RoPE: the default rotation in sections (mrope_section); the Hub's older files
    // name its type "mrope" (Qwen2_5_VLConfig reads it as "default")
    const bool sections = c.family == Family::Qwen25Vl;
    std::string name = s.text(field, "default");
    if (sections && name == "mrope") name = "default";
    const RopeTypeDef* def = nullptr;
    for (const RopeTypeDef& t : kRopeTypes)
        if (name == t.name) def = &t;
    if (!def) s.fail(field, "\"" + name + "\" is not one of " + rope_type_names());
    for (auto it = s.j.begin(); it != s.j.end(); ++it)
        if (!reads(*def, it.key()) && !it.value().is_null() && !(sections && it.key() == "mrope_section"))
            s.fail(it.key(), std::string("is not read by attnviz's \"") + def->name +
                                 "\" rotation (it would change the positions): refused rather than ignored");
    r.type = def->type;

    const ConfigFields& pf = where(top, s, "partial_rotary_factor");
    const double partial = pf.real("partial_rotary_factor", 1.0);
    if (!(partial > 0 && partial <= 1)) pf.fail("partial_rotary_factor", "expected a number in (0, 1]");
    r.dim = static_cast<int>(c.d_head() * partial);
    if (r.dim < 2 || r.dim % 2)
        pf.fail("partial_rotary_factor", "gives " + std::to_string(r.dim) + " rotated dimensions: expected an even number ≥ 2");
    const ConfigFields& tf = where(top, s, "rope_theta");
    r.theta = tf.real("rope_theta", default_theta);
    if (!(r.theta > 1)) tf.fail("rope_theta", "expected a number > 1");
    r.max_positions = c.max_positions;
    // Phi-3 writes original_max_position_embeddings at the top, and transformers gives that one
    // the priority; the others write it in the rotation's object.
    const ConfigFields& of = top.has("original_max_position_embeddings") || !s.has("original_max_position_embeddings") ? top : s;
    r.original_max_positions = of.integer("original_max_position_embeddings", 1, 0);
    if (sections) {  // time, height, width: their pairs' counts, dim/2 in all
        if (!s.has("mrope_section")) s.fail("mrope_section", "missing: how the pairs split between time, height and width");
        int sum = 0;
        for (double x : s.reals("mrope_section", 3)) {
            if (!(x >= 0 && x == std::floor(x))) s.fail("mrope_section", "expected counts of pairs (whole numbers ≥ 0)");
            r.sections.push_back(static_cast<int>(x)), sum += static_cast<int>(x);
        }
        if (sum != r.dim / 2)
            s.fail("mrope_section", "sums to " + std::to_string(sum) + ": a head's rotation has " + std::to_string(r.dim / 2) + " pairs (head_dim / 2)");
    }

    const auto factor = [&](double minimum, std::optional<double> fallback = std::nullopt) {
        const double x = s.real("factor", fallback);
        if (!(x >= minimum)) s.fail("factor", "expected a number ≥ " + std::to_string(static_cast<int>(minimum)));
        return x;
    };
    switch (r.type) {
        case Rope::Type::Default: break;
        case Rope::Type::Linear:
        case Rope::Type::Dynamic: r.factor = factor(1); break;
        case Rope::Type::Llama3:
            r.factor = factor(1);
            r.low_freq_factor = s.real("low_freq_factor");
            r.high_freq_factor = s.real("high_freq_factor");
            if (!(r.high_freq_factor > r.low_freq_factor && r.low_freq_factor > 0))
                s.fail("high_freq_factor", "expected high_freq_factor > low_freq_factor > 0");
            if (r.original_max_positions == 0) s.fail("original_max_position_embeddings", "missing");
            break;
        case Rope::Type::Yarn:
            r.factor = factor(1);
            r.attention_factor = s.real("attention_factor", 0.0);
            if (r.attention_factor < 0) s.fail("attention_factor", "expected a number ≥ 0");
            r.beta_fast = s.real("beta_fast", 32.0), r.beta_slow = s.real("beta_slow", 1.0);
            r.mscale = s.real("mscale", 0.0), r.mscale_all_dim = s.real("mscale_all_dim", 0.0);
            r.truncate = s.boolean("truncate", true);
            break;
        case Rope::Type::LongRope:
            r.short_factor = s.reals("short_factor", static_cast<std::size_t>(r.dim / 2));
            r.long_factor = s.reals("long_factor", static_cast<std::size_t>(r.dim / 2));
            for (const auto& [f, xs] : {std::pair{"short_factor", &r.short_factor}, std::pair{"long_factor", &r.long_factor}})
                for (double x : *xs)
                    if (!(x > 0)) s.fail(f, "expected positive numbers");
            r.factor = factor(0, 1.0);
            r.attention_factor = s.real("attention_factor", 0.0);
            if (r.attention_factor < 0) s.fail("attention_factor", "expected a number ≥ 0");
            break;
    }
    return r;
}

}  // namespace

// [SECTION] read_rope ---------------------------------------------------------------------------------

const char* rope_type_name(Rope::Type type) {  // the table's name, "" for the default
    for (const RopeTypeDef& t : kRopeTypes)
        if (t.type == type && type != Rope::Type::Default) return t.name;
    return "";
}

void read_rope(const ConfigFields& f, ModelConfig& c, double theta) {
    static const nlohmann::json kNone = nlohmann::json::object();  // no scaling: the type "default"
    const std::optional<ConfigFields> params = f.object("rope_parameters");
    const std::optional<ConfigFields> scaling = f.object("rope_scaling");
    if (params && scaling) f.fail("rope_scaling", "given with rope_parameters: a config states its rotation one way");
    if (!params) {  // the older form
        c.rope = read_one(f, scaling ? *scaling : ConfigFields{kNone, f.file, "rope_scaling.", f.read}, c, theta);
        return;
    }
    bool per_type = !params->j.empty();
    for (auto it = params->j.begin(); it != params->j.end(); ++it) per_type = per_type && it.value().is_object();
    if (!per_type) {
        c.rope = read_one(f, *params, c, theta);
        return;
    }
    // One rotation per layer type: the full-attention layers' in c.rope, the sliding layers' in
    // c.local_rope (block_spec picks by the layer's window).
    for (auto it = params->j.begin(); it != params->j.end(); ++it)
        if (it.key() != "full_attention" && it.key() != "sliding_attention")
            params->fail(it.key(), "is not a layer type attnviz runs (full_attention, sliding_attention)");
    if (!params->has("full_attention")) params->fail("full_attention", "missing");
    c.rope = read_one(f, *params->object("full_attention"), c, theta);
    if (params->has("sliding_attention")) c.local_rope = read_one(f, *params->object("sliding_attention"), c, theta);
}

}  // namespace attn
