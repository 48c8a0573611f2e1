// live_scenes.cpp: see live_scenes.hpp.
#include "live_scenes.hpp"

#include "model_state.hpp"

namespace attn {

std::span<const LiveScene> live_scenes() {
    static constexpr LiveScene kScenes[] = {
        {"induction", "tiny-lm",
         "The old man saw a small red boat on the river. The old man saw a small red boat on the river.", "", View::Heatmap,
         HeadKind::Induction, "",
         "tiny-lm (a GPT-2 trained here) on a sentence said twice, its best induction-scoring head selected. This small "
         "model learned no strong induction head (score 0.05; docs/MODELS.md): see what the second copy looks at. "
         "一句话说两遍，选出归纳分数最高的头；这个小模型没有学出强的归纳头（0.05），看看第二遍在看哪里。"},
        {"trained-heads", "tiny-lm", "To be, or not to be, that is the question. 床前明月光，疑是地上霜。", "", View::Model,
         HeadKind::Prev, "",
         "Every head of tiny-lm, tagged with what it does where its score clears the threshold (previous token, "
         "induction, first token, punctuation; docs/MODELS.md). 每个头标出它做的事：前一词、归纳、首词、标点。"},
        {"translate-numbers", "tiny-translator", "", "1999年12月31日", View::Heatmap, std::nullopt, "cross_attention:2:1",
         "tiny-translator (a Marian model trained here) writes the date in English; its cross attention shows which "
         "source token each output token comes from. 翻译数字与日期的小模型：交叉注意力显示每个输出词元来自哪个源词元。"},
    };
    return kScenes;
}

const LiveScene* find_live_scene(std::string_view name) {
    for (const LiveScene& s : live_scenes())
        if (name == s.name) return &s;
    return nullptr;
}

void open_live_scene(AppState& st, const LiveScene& scene) {
    ModelSession& ms = st.model;
    ms.text = scene.text;
    ms.source = scene.source;
    ms.translate = *scene.source != '\0';
    model_input_changed(st);
    st.link_map = scene.map;
    st.link_map_view = scene.view;
    ms.pick_head = scene.pick;
    open_builtin_model(st, scene.model);  // nothing when it is in use already: then pick now
    if (ms.builtin == scene.model && ms.model && !ms.loading) apply_pick_head(st);
}

}  // namespace attn
