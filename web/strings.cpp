// strings.cpp: the UI's fixed words, English and Chinese. Chinese follows the seeds' terms:
// 查询 / 键 / 值 for Q / K / V, 掩码, 缩放, 多头, 拼接, 编码器 / 解码器.
// Every Chinese character here is baked into the first-frame font (CMakeLists.txt passes this
// file to scripts/fonts.sh), so switching the language never downloads a font.
#include "strings.hpp"

namespace attn {
namespace {

struct Entry {
    Str key;
    const char* en;
    const char* zh;
};

// In the order of Str; tests/test_strings.cpp checks the order and that nothing is empty.
constexpr Entry kTable[] = {
    {Str::Tagline, "attention, drawn", "注意力，画出来"},
    {Str::ThemeLight, "Light theme", "浅色主题"},
    {Str::ThemeDark, "Dark theme", "深色主题"},
    {Str::LanguageSwitch, "中文", "English"},
    {Str::SectionScene, "SCENE", "场景"},
    {Str::SectionModel, "MODEL", "模型"},
    {Str::CustomScene, "(custom scene)", "（自定义场景）"},
    {Str::PasteScene, "Paste a scene (JSON)…", "粘贴场景（JSON）…"},
    {Str::KindSelf, "Self", "自注意力"},
    {Str::KindMasked, "Masked", "掩码"},
    {Str::KindCross, "Cross", "交叉"},
    {Str::Sentence, "Sentence", "句子"},
    {Str::TargetSentence, "Target sentence (decoder, queries)", "目标句（解码器，查询）"},
    {Str::SourceSentence, "Source sentence (encoder, keys and values)", "源句（编码器，键和值）"},
    {Str::Heads, "heads", "头数"},
    {Str::Scale, "scale", "缩放"},
    {Str::DivideBy, "divide by", "除以"},
    {Str::Weights, "weights", "权重矩阵"},
    {Str::Seed, "seed", "随机种子"},
    {Str::ScaleInvSqrtDk, "1/√d_k (the paper)", "1/√d_k（论文）"},
    {Str::ScaleNone, "none", "不缩放"},
    {Str::ScaleTemperature, "temperature", "温度"},
    {Str::WeightsIdentity, "identity (Q = K = V = X)", "单位矩阵（Q = K = V = X）"},
    {Str::WeightsRandom, "random (seeded)", "随机（固定种子）"},
    {Str::WeightsExplicit, "explicit (from the scene)", "给定（来自场景）"},
    {Str::Positional, "Sinusoidal positional encoding", "正弦位置编码"},
    {Str::Embeddings, "Embeddings", "嵌入向量"},
    {Str::EmbeddingsGiven, "given; drag a value to change it", "已给定；拖动数值即可修改"},
    {Str::EmbeddingsGenerated, "generated from the tokens; drag to edit", "由词生成；拖动即可编辑"},
    {Str::EmbeddingsTooLarge, "%d×%d is too large to edit here (up to 16 tokens × 8 dimensions); "
                              "paste a scene with \"embeddings\" instead.",
     "%d×%d 太大，无法在此编辑（最多 16 个词 × 8 维）；请粘贴带 \"embeddings\" 的场景。"},
    {Str::Target, "target", "目标句"},
    {Str::Source, "source", "源句"},
    {Str::GenerateFromTokens, "Generate from tokens", "由词重新生成"},
    {Str::MoreTokens, "+%zu more", "还有 %zu 个"},
    {Str::JsonHelp, "A scene file: kind, tokens (a list or a sentence), optional embeddings, d_model, heads, "
                    "weights, scale, mask, positional. Load computes it; the figure only changes when it is valid.",
     "场景文件：kind、tokens（列表或句子）、可选的 embeddings、d_model、heads、weights、scale、mask、"
     "positional。点“载入”即计算；只有场景有效时图才会改变。"},
    {Str::JsonLoad, "Load", "载入"},
    {Str::JsonCurrent, "Current scene", "当前场景"},
    {Str::JsonClose, "Close", "关闭"},
    {Str::ViewLines, "Lines", "连线"},
    {Str::ViewHeatmap, "Heatmap", "热力图"},
    {Str::ViewSteps, "Steps", "步骤"},
    {Str::HeadN, "head %d", "头 %d"},
    {Str::HideBelow, "hide below", "隐藏低于"},
    {Str::TopK, "top-k", "前 k 个"},
    {Str::All, "all", "全部"},
    {Str::Head, "head", "头"},
    {Str::Mean, "mean", "平均"},
    {Str::HeadOf, "%d of %d", "%d / %d"},
    {Str::Show, "show", "显示"},
    {Str::ValuesWeights, "weights (softmax)", "权重（softmax 后）"},
    {Str::ValuesScores, "scores (scaled)", "分数（缩放后）"},
    {Str::Numbers, "numbers", "数值"},
    {Str::AttentionTitle, "%s attention", "%s"},
    {Str::StatusLine, "%s attention · %zu queries × %zu keys · %s · d_k = %d · %s",
     "%s · %zu 个查询 × %zu 个键 · %s · d_k = %d · %s"},
    {Str::HeadsOne, "%d head", "%d 个头"},
    {Str::HeadsMany, "%d heads", "%d 个头"},
    {Str::LoadingGlyphs, "· loading more CJK glyphs…", "· 正在加载更多汉字字形…"},
    {Str::HintLines, "hover a token to isolate its lines, click to pin", "悬停在词上只看它的连线，点击固定"},
    {Str::HintHeatmap, "hover a cell for its weight and score", "悬停在格子上查看权重和分数"},
    {Str::HintSteps, "hover a number to see where it comes from", "悬停在数字上查看它从何而来"},
    {Str::ShowingLastGood, "  (showing the last good figure)", "（显示上一张有效的图）"},
    {Str::EmptyFigure, "Type a sentence to see its attention.", "输入一个句子，看看它的注意力。"},
    {Str::ScoresOverSqrt, "scores / √%d", "分数 / √%d"},
    {Str::UnscaledScores, "unscaled scores", "未缩放的分数"},
    {Str::ScoresOverDivisor, "scores / %.2f", "分数 / %.2f"},
    {Str::NameSelf, "self", "自注意力"},
    {Str::NameMasked, "masked", "掩码自注意力"},
    {Str::NameCross, "cross", "交叉注意力"},
    {Str::AxisQueries, "Queries", "查询"},
    {Str::AxisKeys, "Keys", "键"},
    {Str::AxisTargetQueries, "Target (decoder) · queries", "目标句（解码器）· 查询"},
    {Str::AxisSourceKeys, "Source (encoder) · keys", "源句（编码器）· 键"},
    {Str::CaptionKeys, "keys →", "键 →"},
    {Str::CaptionQueries, "queries ↓", "查询 ↓"},
    {Str::CaptionSourceKeys, "keys: source (encoder) →", "键：源句（编码器）→"},
    {Str::CaptionTargetQueries, "queries: target (decoder) ↓", "查询：目标句（解码器）↓"},
    {Str::Masked, "masked", "已掩码"},
    {Str::LegendWeight, "weight", "权重"},
    {Str::LegendScore, "score", "分数"},
    {Str::MeanWeight, "mean weight   %.4f", "平均权重    %.4f"},
    {Str::Weight, "weight        %.4f", "权重        %.4f"},
    {Str::Score, "score q·k      %.4f", "分数 q·k    %.4f"},
    {Str::ScaledScore, "scaled score  %.4f", "缩放后分数  %.4f"},
    {Str::TipCell, "query %d, key %d, head %d", "查询 %d，键 %d，头 %d"},
    {Str::TipCellMean, "query %d, key %d, mean of heads", "查询 %d，键 %d，各头平均"},
    {Str::TipHeadWeight, "head %d   %.4f", "头 %d   %.4f"},
    {Str::TipMaskedScore, "masked: the score becomes −∞", "已掩码：分数变为 −∞"},
    {Str::TipLaterKeys, "a query may not attend to later keys", "查询不能关注它后面的键"},
    {Str::LinesTopK, "showing each query's top %d keys (%lld lines in all)", "每个查询只显示最强的 %d 个键（共 %lld 条线）"},
    {Str::FirstShown, "… (first 16 shown)", "…（只显示前 16 个）"},
    {Str::Entropy, "H (nats)", "熵 H"},
    {Str::TipTokens, "query \"%s\", key \"%s\", head %d", "查询“%s”，键“%s”，头 %d"},
    {Str::TipMasked, "masked: + (−∞)", "已掩码：+ (−∞)"},
    {Str::TipEntropy, "row entropy H = %s nats (max ln %zu = %s)", "行熵 H = %s nats（最大为 ln %zu = %s）"},
    {Str::TipConcat, "head %d, column %d of its output", "头 %d 输出的第 %d 列"},
    {Str::TipFinal, "row of concat · column of W_o (+ b_o)", "concat 的一行 · W_o 的一列（+ b_o）"},
    {Str::CapX, "The input: one row per token, its embedding.", "输入：每个词一行，即它的嵌入向量。"},
    {Str::CapXCross, "Decoder input: the target tokens that ask.", "解码器的输入：发出查询的目标句词。"},
    {Str::CapXKv, "Encoder output: the source tokens looked at.", "编码器的输出：被关注的源句词。"},
    {Str::CapQ, "Queries: what each token is looking for.", "查询：每个词要找什么。"},
    {Str::CapQCross, "Queries come from the decoder (target).", "查询来自解码器（目标句）。"},
    {Str::CapK, "Keys: what each token offers to be matched.", "键：每个词拿来被匹配的特征。"},
    {Str::CapKCross, "Keys come from the encoder (source).", "键来自编码器（源句）。"},
    {Str::CapV, "Values: what a token passes on when attended to.", "值：一个词被关注时传递出去的内容。"},
    {Str::CapVCross, "Values come from the encoder too.", "值同样来自编码器（源句）。"},
    {Str::CapScores, "Each query's dot product with every key: how similar they are.", "每个查询与每个键的点积：二者有多相似。"},
    {Str::CapScaled, "Divide by √d_k so large d_k does not push softmax to one-hot (tiny gradients).",
     "除以 √d_k，避免 d_k 大时 softmax 趋于 one-hot（梯度消失）。"},
    {Str::CapUnscaled, "No scaling: with large d_k softmax saturates toward one-hot.", "不缩放：d_k 大时 softmax 会饱和，趋于 one-hot。"},
    {Str::CapTemperature, "Divide by a temperature: higher flattens the weights, lower sharpens them.",
     "除以温度：温度越高权重越平均，越低越集中。"},
    {Str::CapMask, "−∞ above the diagonal: a token may not look at later tokens.", "对角线以上为 −∞：不能看到后面的词。"},
    {Str::CapMaskGiven, "−∞ where the mask forbids: those keys get weight 0.", "掩码禁止处为 −∞：这些键的权重为 0。"},
    {Str::CapSoftmax, "Softmax of each row: scores become weights that sum to 1.", "对每一行做 softmax：分数变成和为 1 的权重。"},
    {Str::CapOutput, "Weights times values: each query's weighted mix of the values.", "权重乘以值：每个查询得到值的加权和。"},
    {Str::CapConcat, "Concatenate the heads' outputs side by side (multi-head).", "拼接多头的输出：各头并排放在一起。"},
    {Str::CapFinal, "Multiply by W_o: mix the heads back into d_model.", "乘以 W_o：把多头的信息融合回 d_model 维。"},
    {Str::OpenModel, "Open model attention…", "打开模型注意力…"},
    {Str::OpenModelTip, "A JSON export of a model's attention (Hugging Face output_attentions, BertViz); or drop the file on the window.", "模型注意力的 JSON 导出文件（Hugging Face output_attentions、BertViz）；也可以把文件拖到窗口上。"},
    {Str::FilePath, "File path", "文件路径"},
    {Str::OpenFile, "Open", "打开"},
    {Str::SectionImport, "IMPORTED ATTENTION", "导入的注意力"},
    {Str::ImportFile, "file  %s", "文件  %s"},
    {Str::ImportModel, "model  %s", "模型  %s"},
    {Str::ImportShape, "%d layers × %d heads · %zu × %zu tokens", "%d 层 × %d 个头 · %zu × %zu 个词元"},
    {Str::StackAttention, "Attention", "注意力"},
    {Str::StackEncoder, "Encoder", "编码器"},
    {Str::StackDecoder, "Decoder", "解码器"},
    {Str::StackCross, "Cross", "交叉"},
    {Str::ShowHead, "One head", "单个头"},
    {Str::ShowAggregate, "Aggregate", "聚合"},
    {Str::ShowRollout, "Rollout", "展开"},
    {Str::Layer, "layer", "层"},
    {Str::LayerN, "layer %d", "第 %d 层"},
    {Str::Reduce, "reduce", "合并方式"},
    {Str::ReduceMean, "mean", "平均"},
    {Str::ReduceMax, "max", "最大值"},
    {Str::AggLayers, "layers", "层"},
    {Str::AggHeads, "heads", "头"},
    {Str::AggAll, "all", "全选"},
    {Str::RolloutNote, "Attention rollout (Abnar & Zuidema): each layer's heads reduced, the residual added (½A + ½I), layers multiplied up to the chosen one.", "注意力展开（Abnar 与 Zuidema）：每层先合并各头，加上残差（½A + ½I），再从第一层乘到所选的层。"},
    {Str::RolloutSelfOnly, "Rollout needs a self-attention stack.", "展开只适用于自注意力。"},
    {Str::MergeWords, "Merge subwords into words", "把子词合并成词"},
    {Str::MergeWordsTip, "Rows: mean of a word's pieces; columns: their sum, so rows still sum to 1.", "行取一个词各子词的平均，列取它们的和，所以每行之和仍为 1。"},
    {Str::CloseImport, "Back to the scene", "返回场景"},
    {Str::ViewModel, "Model", "模型"},
    {Str::Reading, "reading %s  %s / %s", "正在读取 %s  %s / %s"},
    {Str::ReadingUnknown, "reading %s  %s", "正在读取 %s  %s"},
    {Str::Parsing, "parsing %s…", "正在解析 %s…"},
    {Str::StepsNoQkv, "This file holds attention weights only: it has no Q, K, V or scores, so the pipeline cannot be shown. These are the weights the model computed.", "该文件只含注意力权重，没有 Q、K、V 和分数，因此无法展示计算步骤。下面是模型算出的权重。"},
    {Str::ThumbTip, "layer %d, head %d", "第 %d 层，第 %d 个头"},
    {Str::ThumbClick, "click to open it in the lines and heatmap views", "点击后在连线图和热力图中打开"},
    {Str::CaptionHeads, "heads →", "头 →"},
    {Str::CaptionLayers, "layers ↓", "层 ↓"},
    {Str::ImportStatus, "imported · %s attention · %zu queries × %zu keys · %s", "导入 · %s · %zu 个查询 × %zu 个键 · %s"},
    {Str::DescHead, "layer %d, head %d", "第 %d 层第 %d 个头"},
    {Str::DescAggregate, "%s of %d heads × %d layers", "%s：%d 个头 × %d 层"},
    {Str::DescRollout, "rollout to layer %d", "展开到第 %d 层"},
    {Str::HintModel, "click a map to open it · hover for a larger view", "点击小图打开 · 悬停查看大图"},
    {Str::HintSum, "shift-click queries to add up their attention", "按住 Shift 点击多个查询，看注意力之和"},
    {Str::SumOfQueries, "sum of %zu queries", "%zu 个查询之和"},
};
static_assert(sizeof kTable / sizeof kTable[0] == kStrCount, "one entry per Str, in order");

Lang g_lang = Lang::En;

}  // namespace

const char* text(Str key, Lang lang) {
    const Entry& e = kTable[static_cast<int>(key)];
    return lang == Lang::Zh ? e.zh : e.en;
}

void set_ui_language(Lang lang) { g_lang = lang; }
Lang ui_language() { return g_lang; }

bool string_table_in_order() {
    for (int i = 0; i < kStrCount; ++i)
        if (static_cast<int>(kTable[i].key) != i) return false;
    return true;
}

}  // namespace attn
