// live_scenes.cpp: see live_scenes.hpp.
#include "live_scenes.hpp"

#include "model_state.hpp"

namespace attn {

std::span<const LiveScene> live_scenes() {
    static constexpr LiveScene kScenes[] = {
        {"induction", "tiny-circuits",
         "The old man saw a small red boat on the river. The old man saw a small red boat on the river.", "", View::Heatmap,
         std::nullopt, "attention:2:1",
         "tiny-circuits (a 2-layer Llama trained here) on a sentence said twice, its induction head 2:1 "
         "(layer 2's four heads score 0.86–0.95 on a repeat of 30 random tokens; 2:1 is the one that does it best on "
         "English text; docs/MODELS.md): each token of the second copy looks at the token that followed it the first time. "
         "一句话说两遍，显示归纳头 2:1（第 2 层四个头在 30 个随机词元的重复上得分 0.86–0.95）：第二遍的每个词元看向它第一次出现时后面的那个词元。"},
        {"induction-circuit", "tiny-circuits",
         "Mira planted seven blue tulips near the old mill. Mira planted seven blue tulips near the old mill.", "",
         View::Steps, std::nullopt, "attention:2:1",
         "The induction circuit of tiny-circuits, step by step: a previous-token head in layer 1 (head 1:1, "
         "previous-token score 0.71; layer 1's other heads share the work, and at some keys one of them looks back harder: the "
         "words under the figure name the head that wrote that key) writes each token's predecessor into its place, and the induction head in layer 2 reads it with W_K (K-composition), so the "
         "query finds the token after its earlier copy. Type your own repeated sentence; the words under the figure say "
         "why each row looks where it does. 归纳电路逐步展示：第 1 层的前一词元头（1:1，得分 0.71；第 1 层的其他头分担这项工作，"
         "图下的文字指出在那个键上做得最多的头）把前一个词写进每个位置，第 2 层的归纳头用 "
         "W_K 读取它（K-组合），于是查询找到它上一次出现之后的词元。"},
        {"why-induction", "tiny-circuits", "Zq%k8wJ Zq%k8w", "", View::Heatmap, std::nullopt, "attention:2:3",
         "Why tiny-circuits says \"J\" after a random string said again: the logit lens has J only after layer 2 (rank 206 after "
         "the embeddings, 268 after layer 1, then first at p = 0.92); its logit, 10.4, is layer 2's heads (2:3 +2.47, 2:2 +1.26, "
         "2:1 +1.17, 2:4 +1.07) and MLP (+4.52); patched into the Compare text (w changed to v before J), the stream carries the "
         "answer at w (position 7) in the embeddings, at J (8) after layer 1, where the previous-token heads wrote w, and at the "
         "last token after layer 2: each 100 %. 为什么 tiny-circuits 在重复的随机串后说“J”：对数几率透镜里 J 在第 2 层之后才出现"
         "（p = 0.92）；它的对数几率 10.4 来自第 2 层的头和 MLP；修补显示答案先在位置 7 的 w，第 1 层之后到 J（前一词元头把 w "
         "写到那里），第 2 层之后到最后一个词元。",
         "Zq%k8vJ Zq%k8w", true},
        {"trained-heads", "tiny-lm", "To be, or not to be, that is the question. 床前明月光，疑是地上霜。", "", View::Model,
         HeadKind::Prev, "",
         "Every head of tiny-lm, tagged with what it does where its score clears the threshold (previous token, "
         "induction, first token, punctuation; docs/MODELS.md). 每个头标出它做的事：前一词、归纳、首词、标点。"},
        {"translate-numbers", "tiny-translator", "", "1999年12月31日", View::Heatmap, std::nullopt, "cross_attention:2:1",
         "tiny-translator (a Marian model trained here) writes the date in English; its cross attention shows which "
         "source token each output token comes from. 翻译数字与日期的小模型：交叉注意力显示每个输出词元来自哪个源词元。"},
        {"vit-digit", "tiny-vit", "", "", View::Image, std::nullopt, "attention:1:2",
         "tiny-vit (a 4-layer ViT trained here) reads a 4 drawn in a font it never saw, beside a stroke that is no digit; "
         "its [CLS] head 1:2 gives the digit's patches 84 % of what it gives the patches, which are 20 % of the picture "
         "(held-out pictures; docs/MODELS.md). Click a patch for its own attention, a digit's button in the panel for another "
         "picture, or open your own. 小 ViT 读一个用它没见过的字体写的 4，旁边有一笔干扰笔画；它的 [CLS] 头 1:2 "
         "把它给图块的注意力的 84% 放在数字所在的图块上（这些图块只占图片的 20%）。",
         "", false, "example-4.png"},
    };
    return kScenes;
}

const LiveScene* find_live_scene(std::string_view name) {
    for (const LiveScene& s : live_scenes())
        if (name == s.name) return &s;
    return nullptr;
}

const LiveScene* shown_live_scene(const AppState& st) {
    const ModelSession& ms = st.model;
    for (const LiveScene& s : live_scenes())
        if (ms.builtin == s.model && ms.compare == s.compare && (!*s.text || ms.text == s.text) && (!*s.source || ms.source == s.source) &&
            (!*s.picture || (ms.picture && ms.picture->name == s.picture)))
            return &s;  // "" = the scene does not set it (gpt2 reads no source; marian writes its text)
    return nullptr;
}

void open_live_scene(AppState& st, const LiveScene& scene) {
    ModelSession& ms = st.model;
    ms.text = scene.text;
    ms.source = scene.source;
    ms.translate = *scene.source != '\0';
    ms.compare = scene.compare;
    ms.experiment.attribution = ms.experiment.lens = ms.experiment.patching = scene.why;
    model_input_changed(st);
    st.link_map = scene.map;
    st.link_map_view = scene.view;
    ms.pick_head = scene.pick;
    open_builtin_model(st, scene.model);  // nothing when it is in use already: then pick now
    if (*scene.picture) want_example_picture(st, scene.picture);
    if (ms.builtin == scene.model && ms.model && !ms.loading) apply_pick_head(st);
}

}  // namespace attn
