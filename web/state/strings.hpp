// strings.hpp: every fixed word of the UI in English and Chinese, one table (strings.cpp).
// tr(lang, Str) gives the text in the language the app state chose (AppState::lang).
// No ImGui here, so the doctest suite can check the table.
#pragma once

namespace attn {

enum class Lang { En, Zh };

enum class Str {
    // controls panel
    Tagline, ThemeLight, ThemeDark, LanguageSwitch, SectionScene, SectionModel, CustomScene, PasteScene,
    KindSelf, KindMasked, KindCross, Sentence, TargetSentence, SourceSentence,
    Heads, Scale, DivideBy, Weights, Seed, ScaleInvSqrtDk, ScaleNone, ScaleTemperature,
    WeightsIdentity, WeightsRandom, WeightsExplicit, Positional, Embeddings, EmbeddingsGiven, EmbeddingsGenerated,
    EmbeddingsTooLarge, Target, Source, GenerateFromTokens, MoreTokens,
    JsonHelp, JsonLoad, JsonCurrent, JsonClose,
    // toolbar
    ViewLines, ViewHeatmap, ViewSteps, HeadN, HideBelow, TopK, All, Head, Mean, HeadOf, Show,
    ValuesWeights, ValuesScores, Numbers, LogScale, LogScaleTip,
    // status line and figure
    AttentionTitle, StatusLine, HeadsOne, HeadsMany, LoadingGlyphs, HintLines, HintHeatmap, HintSteps, ShowingLastGood, EmptyFigure,
    ScoresOverSqrt, UnscaledScores, ScoresOverDivisor,
    // kinds (status line, titles)
    NameSelf, NameMasked, NameCross,
    // axes
    AxisQueries, AxisKeys, AxisTargetQueries, AxisSourceKeys, CaptionKeys, CaptionQueries, CaptionSourceKeys,
    CaptionTargetQueries, Masked, LegendWeight, LegendScore, MeanWeight, Weight, Score, ScaledScore,
    TipCell, TipCellMean, TipHeadWeight, TipMaskedScore, TipLaterKeys, LinesTopK, LinesStrongest, LinesBuilding, TopKAuto,
    // Steps view: tooltip words and captions
    FirstShown, StepsShown, Entropy, TipTokens, TipMasked, TipEntropy, TipConcat, TipFinal,
    CapX, CapXCross, CapXKv, CapQ, CapQCross, CapK, CapKCross, CapV, CapVCross, CapScores, CapScaled, CapUnscaled,
    CapTemperature, CapMask, CapMaskGiven, CapSoftmax, CapOutput, CapConcat, CapFinal,
    // link and embed (link_panel.cpp)
    CopyLink, EmbedCode, Copied, EmbedHelp, EmbedWidth, EmbedHeight, EmbedFigureOnly, EmbedCopy, OpenFull,
    AllHeads,
    // export menu and display settings (web/ui/export.cpp, web/ui/display_menu.cpp)
    Export, ExportPng1, ExportPng2, ExportPng4, ExportSvg, ExportSvgSteps, ExportJson, ExportSaved, ExportFailed,
    Display, ThemeAuto, ThemeLightShort, ThemeDarkShort, ThemeAutoNote, TextSize, FrameTimeToggle, FrameTimeLine, FrameTimeFigure,
    // imported attention (web/ui/model_view.cpp)
    OpenModel, OpenModelTip, FilePath, OpenFile, SectionImport, ImportFile, ImportModel,
    ImportShape, StackAttention, StackEncoder, StackDecoder, StackCross, ShowHead, ShowAggregate,
    ShowRollout, Layer, LayerN, Reduce, ReduceMean, ReduceMax, AggLayers, AggHeads, AggAll,
    RolloutNote, RolloutSelfOnly, MapsOnDemand, MergeWords, MergeWordsTip, CloseImport, ViewModel, Reading,
    ReadingUnknown, Parsing, StepsNoQkv, CapQKept, ThumbTip, ThumbClick, CaptionHeads, CaptionLayers,
    ImportStatus, DescHead, DescAggregate, DescRollout, HintModel, HintExplain, HintCompare, HintHeatmapWeight, HintSum, SumOfQueries,
    // heatmap at scale (web/ui/heatmap_view.cpp)
    HeatMemory, HeatMeanHeads, HeatComputing, HeatFit,
    // a model run live (web/ui/live_panel.cpp)
    OpenLiveModel, OpenLiveModelTip, OpenHub, HubIntroPage, HubIntroDesktop, HubId, HubBadId, HubSuggested, HubOffline, HubNoSize, HubAddress, HubStored,
    HubNoneStored, HubRemove, HubStorageFull, FolderPath, SectionLive, LiveText, LiveSource, LiveTarget, LiveTranslate,
    LiveTranslateTip, NextTokens, LiveReading, LiveFetching, CancelFetch, LiveLoading, LiveRunning, CloseModel, LiveThreads, LiveThreadsTip, LiveLastRun, LiveStatus, CapXModel, SectionMaps,
    LivePicture, OpenPicture, OpenPictureTip, PicturePath, PictureExamples, PictureExampleTip, PictureNone, PictureShown, PictureSeen, Labels,
    ChatToggle, ChatToggleTip, ChatNone, ChatRemove, ChatAddTurn, ChatPrompt,
    // what a head does (core/model/heads.hpp), on the model view's thumbnails: full and brief
    HeadPrev, HeadInduction, HeadSink, HeadDelimiter, HeadDuplicate, HeadPrevBrief, HeadInductionBrief, HeadSinkBrief, HeadDelimiterBrief, HeadDuplicateBrief, HeadLearnedSink, HeadLearnedSinkBrief, ExpertsTitle, ExpertWeight,
    HeadScoresTip, TrainedModels,
    // experiments on a live model (web/ui/live_panel.cpp, the model view's tooltip)
    SectionExperiments, ThumbKnockRight, ThumbRestoreRight, ThumbKnockClick, ThumbRestoreClick, KnockedOut, KnockedNone,
    ClickKnocks, AblationLabel, AblationZero, AblationMean, AblationTip, RestoreAll, HideTokensHint, HiddenTokens,
    HeadImportanceToggle, HeadImportanceTip, ImportanceCaption, ImportanceRunning, ImportanceCell, ImportanceNoHead,
    AttributionToggle, AttributionTip, AttributionNoStream, AttributionCaption, AttributionCell,
    LensToggle, LensTip, LensCaption, LensCell, LensRunning,
    ProbsLabel, ProbsOff, ProbsP, ProbsSurprisal, ProbsTip, ProbsLegendP, ProbsLegendSurprisal, ProbsToken, ProbsFirst,
    ProbsLikeliest, ProbsRunning, GenStepProb, CancelPatching, WhyTarget, WhyContrast, WhyPrediction, WhyNone, WhyComparePrediction, WhyTokensTip,
    AttributionCaptionContrast, PatchingTokens, PatchingStopped,
    TwinProbs, TwinProbsCols, TwinAttribution, TwinLens, TwinPatchingHeads, TwinPatchingStream, TwinLayerHead,
    PatchingToggle, PatchingTip, PatchingLengths, PatchingCorrupted, PatchingCorruptedHint, PatchingCorruptedTip, PatchingNeedsText, PatchingCaption, PatchingHeadCell, PatchingStreamCaption, PatchingStreamCell,
    PatchingRunning, PatchingSameTop,
    // generation (web/ui/live_panel.cpp)
    SectionGenerate, GenTokens, GenTemperature, GenTemperatureTip, GenTopK, GenTopKTip, GenSeed, GenButton, GenClear,
    GenStep, GenStepCaption, GenPicked, GenMeanRefused,
    // the Explain view (web/ui/explain_view.cpp)
    ViewExplain, ExplainWeights, ExplainValueWeighted, ExplainRollout, ExplainWeightsCap, ExplainValueWeightedCap,
    ExplainRolloutCap, ExplainNoProjections, ExplainNoRollout, ExplainOneHead,
    // past 128 × 128 tokens, one query's row (core/figure/explain_rows.hpp)
    RowsHeading, RowsQuery, RowsQueryTip, RowsStrongest, RowsMax, RowsServed, RowsWords, RowsRollingOut, RowsKeys, HintRows,
    // the Compare view (web/ui/compare_view.cpp) and its text box
    ViewCompare, CompareA, CompareB, CompareDiff, CompareDiffCap, CompareLengths, CompareLiveOnly, CompareNoText, CompareWith,
    CompareWithTip, CompareRowsHeading, CompareDiffRowCap,
    // the Why view (web/ui/why_view.cpp)
    ViewWhy, HintWhy, WhyViewNone, WhyLiveOnly,
    ViewImage, HintImage, ImageCaption, ImageCaptionNone, ImageNoPicture, ImageTip, ImageHideTip, ImageHidden, ImageGlobalView, PictureTiles, PictureWhole,
    // phones (web/ui/panels.cpp) and the figure's accessible twin (web/ui/twin.cpp)
    Controls, CloseControls, ViewOptions, ViewIs, TwinLabel, TwinHeadOf, TwinMeanOf, TwinAttends, TwinThen,
    TwinAttended, TwinStrongest, TwinCell, TwinCellMasked, TwinCaption, TwinTruncated, TwinCorner, TwinNothing, TwinHead, TwinMean,
    // sliding windows and attention sinks (heatmap, lines), shared K/V heads (the model view)
    OutsideWindow, RowsScaled, RowsScaledTip, RowsScaledLegend, WindowSize, TipOutsideWindow, SinkHiddenLegend, SinkRenormalized, SinkOption, SinkOptionTip, SinkOptionLong,
    TipSinkShown, TipSinkHidden, KvShared, KvGroupTip,
    // the Steps view of today's families (rotary positions, q/k norm, soft caps, shared K/V heads)
    CapQNorm, CapKNorm, CapAngles, CapQRotated, CapKRotated, CapRotatedPartial, CapScaledQueryScalar, CapSoftcap,
    CapPatches, CapEmbedded, CapMaskWindow, CapKvShared, TipPassThrough, StepsTurned, StepsUnchanged,
    // the Steps view of an induction head: why its query looks where it does (core/figure/induction.hpp)
    WhyTitle, WhyMatched, WhyShared, WhyNoMatch, WhyNew, WhyKnocked, WhyKnock, WhyRestore, WhyHover,
    // the Steps view's tiles mode: FlashAttention's tiles and the online softmax (core/figure/flash_layout.hpp)
    Tiles, TilesTip, TilesAuto, TilesAutoTip, TilesPrev, TilesNext, TilesStepOf, TilesTooMany,
    TilesHeadTile, TilesHeadSkip, TilesHeadNormalize, TilesHeadCheck, TilesAutoSize, TilesOverview, TilesCode,
    TilesVerdictSame, TilesVerdictOff,
    CapTileS, CapTileM, CapTileP, CapTileAlpha, CapTileL, CapTileO, CapTileSkip, CapTileUnnormalized, CapTileSum, CapTileOi,
    CapTileTiles, CapTileDirect, CapTileDiff,
    // the Q–K space view (core/figure/qk_layout.hpp)
    ViewQk, QkPca, QkTsne, QkHeads, QkWhatPca, QkWhatTsne, QkTsneTooMany, QkNormalized, QkCorrelation, QkQueries, QkKeys,
    QkNearest, QkNearestOne, QkStrongest, QkHeadTitle, QkNoQk, QkHint, QkHeadsHint, QkHeadsHeading,
    // a model PyTorch runs elsewhere (web/state/served_state.hpp)
    SectionServed, ServedBy, ServedConnecting, ServedLost, ServedLostNoFigure, ServedRun, ServedBusy, ServedHere, ServedThumbnails, ServedLayer, ServedGreedy, ServedStatus,
    Count
};

constexpr int kStrCount = static_cast<int>(Str::Count);

const char* text(Str key, Lang lang);
bool string_table_in_order();  // for the tests
inline const char* tr(Lang lang, Str key) { return text(key, lang); }

}  // namespace attn
