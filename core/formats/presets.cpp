// presets.cpp: the seeds' worked examples, written as scene files (SPEC.md §1) and read with
// the same reader users' files go through.
#include "presets.hpp"

#include "text.hpp"

namespace attn {

namespace {

// Seed 001: five 4-dim tokens, Q = K = V = X, scores = QKᵀ/√4. Its softmax table is printed.
constexpr const char* kFiveTokens = R"({
  "name": "five-tokens",
  "description": "Seed 001: five 4-dim tokens with Q = K = V = X (no learned weights), scores = QKᵀ/√4. The softmax table matches the article's printout: every token attends most to itself, and t5 weighs t1, t3 and itself equally (0.2374).",
  "kind": "self",
  "tokens": ["t1", "t2", "t3", "t4", "t5"],
  "embeddings": [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0], [0, 0, 1, 1], [1, 0.5, 0.5, 0]],
  "weights": "identity", "scale": "sqrt_dk"
})";

// Seed 002: "I am good", Z = softmax(XXᵀ)·X with no scaling; its R output is printed.
constexpr const char* kIAmGood = R"({
  "name": "i-am-good",
  "description": "Seed 002: \"I am good\" with x_I = [1,3,2], x_am = [1,1,3], x_good = [1,2,1] and Z = softmax(XXᵀ)·X, unscaled as in the article. The output matches its R printout (z_I = [1, 2.957691, 2.011295]); the weights (0.976/0.018/0.007, 0.268/0.727/0.005, 0.909/0.045/0.045) are what the article rounds to 0.97/0.02/0.01, 0.27/0.73/0.00, 0.90/0.05/0.05 so each row sums to 1.",
  "kind": "self",
  "tokens": ["I", "am", "good"],
  "embeddings": [[1, 3, 2], [1, 1, 3], [1, 2, 1]],
  "weights": "identity", "scale": "none"
})";

// Seed 002's second sequence Y (我 很 好): the article prints only the weights of
// softmax(XYᵀ)·Y, so Y was solved for: these vectors give its table to two decimals.
constexpr const char* kIAmGoodCross = R"({
  "name": "i-am-good-cross",
  "description": "Seed 002, cross attention: queries from X (I am good), keys and values from Y (我 很 好), Z = softmax(XYᵀ)·Y unscaled. The article gives no vectors for Y, only the weights; these Y were solved for so the weights equal its table to two decimals (0.10/0.66/0.24, 0.49/0.49/0.02, 0.16/0.42/0.42). As the article says, the data is illustrative: I attends most to 很, not 我.",
  "kind": "cross",
  "tokens": ["I", "am", "good"],
  "source_tokens": ["我", "很", "好"],
  "embeddings": [[1, 3, 2], [1, 1, 3], [1, 2, 1]],
  "source_embeddings": [[0.92, 0.01, 1.42], [0.03, 0.95, 1.4], [0.65, 1.34, 0]],
  "weights": "identity", "scale": "none"
})";

// Seed 003: d_model = 1, 我 爱 你 = [1], [2], [3].
constexpr const char* kWoAiNi = R"({
  "name": "wo-ai-ni",
  "description": "Seed 003: d_model = 1, 我 = [1], 爱 = [2], 你 = [3], Q = K = V. The article's 0.6/0.2/0.2 table is illustrative, not computed; the real softmax of these scores leans toward 你 in every row (the largest value wins a dot product), which is why real models learn W_q and W_k.",
  "kind": "self",
  "tokens": ["我", "爱", "你"],
  "embeddings": [[1], [2], [3]],
  "weights": "identity", "scale": "sqrt_dk"
})";

// Seed 004: masked self-attention while predicting 我爱吃苹果 token by token.
constexpr const char* kMaskedApple = R"({
  "name": "masked-apple",
  "description": "Seed 004, masked (causal) self-attention on 我 爱 吃 苹果: predicting 爱 may look only at 我, 吃 only at 我 爱, 苹果 at 我 爱 吃. The mask M is −∞ above the diagonal, so those weights are exactly 0. The seed gives no vectors; these were chosen so each word relates to its neighbours (吃 ↔ 苹果, 我 ↔ 爱).",
  "kind": "masked",
  "tokens": ["我", "爱", "吃", "苹果"],
  "embeddings": [[1.5, 0.5, 0, 0], [0.5, 1.5, 0.5, 0], [0, 0.5, 1.5, 1], [0, 0, 1, 1.5]],
  "weights": "identity", "scale": "sqrt_dk"
})";

// Seed 004: cross attention from the English decoder side to the Chinese encoder side.
constexpr const char* kCrossRain = R"({
  "name": "cross-rain",
  "description": "Seed 004, cross attention in translation: the decoder's queries (It rained heavily that day) look at the encoder's keys and values (那天雨很大). The seed gives no vectors; these were chosen along four axes (time, rain, intensity, near/far) so the alignment it describes shows: It → 那天, rained → 雨, heavily → 很大, that → 那, day → 天.",
  "kind": "cross",
  "tokens": ["It", "rained", "heavily", "that", "day"],
  "source_tokens": ["那", "天", "雨", "很", "大"],
  "embeddings": [[1.5, 0, 0, 0], [0, 2, 1, 0], [0, 0, 2, 0], [1.5, 0, 0, 1.5], [1.5, 0, 0, -1.5]],
  "source_embeddings": [[2, 0, 0, 1], [2, 0, 0, -1], [0, 2, 0.5, 0], [0, 0, 2, 0.5], [0, 0.5, 2, -0.5]],
  "weights": "identity", "scale": "sqrt_dk"
})";

// Seed 004: three heads on one sentence, each relating 他 to something else.
// Columns 0–1 feed head 1 (people), 2–3 head 2 (weather), 4–5 head 3 (waiting).
constexpr const char* kMultiHeadRain = R"({
  "name": "multi-head-rain",
  "description": "Seed 004, multi-head attention on 那天雨很大，他等了很久，水汽打湿了衣服，也没有等到她。 with three heads of d_k = 2. The seed gives no vectors; these were made so the query 他 shows the three relations it lists: head 1 他 ↔ 她 (people), head 2 他 ↔ 雨很大 (weather), head 3 他 ↔ 等了很久 (waiting). Identity weights, so each head reads its own two columns of the embeddings.",
  "kind": "self",
  "tokens": ["那", "天", "雨", "很", "大", "，", "他", "等", "了", "很", "久", "，", "水", "汽", "打", "湿", "了", "衣", "服", "，", "也", "没", "有", "等", "到", "她", "。"],
  "embeddings": [
    [0, 0.32, 0.48, 1.28, 0, 0.16], [0, 0.32, 0.48, 1.28, 0, 0.16], [0, 0, 3.2, 0.32, 0, 0], [0, 0, 2.24, 0, 0.48, 0],
    [0, 0, 2.56, 0, 0, 0], [0, 0, 0, 0, 0, 0], [2.24, 0, 1.92, 0, 1.92, 0], [0.48, 0, 0, 0, 2.88, 0],
    [0, 0, 0, 0, 1.28, 0.32], [0, 0, 0.32, 0, 1.92, 0], [0, 0, 0, 0, 2.4, 0.48], [0, 0, 0, 0, 0, 0],
    [0, 0, 1.6, 0.96, 0, 0], [0, 0, 1.6, 0.96, 0, 0], [0, 0, 0.8, 0.64, 0, 0], [0, 0, 1.28, 0.8, 0, 0],
    [0, 0, 0, 0, 0.32, 0.32], [0.48, 0.8, 0.32, 0.64, 0, 0], [0.48, 0.8, 0.32, 0.64, 0, 0], [0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0.32, 0.64], [0, 0.48, 0, 0, 0.64, 0.96], [0, 0.48, 0, 0, 0.48, 0.8], [0.48, 0, 0, 0, 2.24, 0.48],
    [0.32, 0, 0, 0, 0.96, 0.64], [3.2, 0.48, 0, 0, 0.32, 0], [0, 0, 0, 0, 0, 0]],
  "heads": 3, "weights": "identity", "scale": "sqrt_dk"
})";

// Not from a seed: a long text for the views at scale (zoomed heatmap, top-k lines). One
// paragraph said twenty times. With Q = K = V = X and no scaling, a word's match with itself
// (|x|² ≈ 21 for 64 dimensions per head) outweighs any other word's, so each word puts its
// weight on its earlier copies, shared equally: stripes one paragraph apart.
constexpr const char* kLongParagraph =
    "Attention lets every word look back at the words before it. A query asks what it needs, each key says "
    "what it offers, and the softmax turns their match into weights that add up to one. The values are then "
    "mixed with those weights. When a text repeats itself, a word finds its own copies first, and the whole "
    "page shows up as stripes.";
constexpr int kLongRepeats = 20;

Scene long_text() {
    Scene s;
    s.name = "long-text";
    s.kind = AttentionKind::Masked;
    const std::vector<std::string> paragraph = tokenize(kLongParagraph);
    for (int i = 0; i < kLongRepeats; ++i) s.tokens.insert(s.tokens.end(), paragraph.begin(), paragraph.end());
    s.description = "Not from a seed: one paragraph said " + std::to_string(kLongRepeats) + " times (" +
                    std::to_string(s.tokens.size()) +
                    " tokens), causal, Q = K = V = X and no scaling. A word matches itself best, so it shares its "
                    "weight among its earlier copies: stripes one paragraph apart. Zoom the heatmap (wheel, "
                    "pinch) to read the tokens; the lines show each word's top keys.";
    s.d_model = 512;
    s.heads = 8;
    s.scale = Scale{ScaleKind::None, 1.0f};
    validate(s);
    return s;
}

std::vector<Scene> read_presets() {
    std::vector<Scene> scenes;
    for (const char* text : {kFiveTokens, kIAmGood, kIAmGoodCross, kWoAiNi, kMaskedApple, kCrossRain, kMultiHeadRain})
        scenes.push_back(read_scene(text));
    scenes.push_back(long_text());
    return scenes;
}

}  // namespace

const std::vector<Scene>& presets() {
    static const std::vector<Scene> kScenes = read_presets();
    return kScenes;
}

const Scene* find_preset(std::string_view name) {
    for (const Scene& s : presets())
        if (s.name == name) return &s;
    return nullptr;
}

}  // namespace attn
