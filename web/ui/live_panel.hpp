// live_panel.hpp: the controls of a model run live (web/state/model_state.hpp): opening a model
// folder, the text it reads, translation for encoder-decoder models, the likeliest next tokens,
// and the progress of reading, loading and running.
#pragma once

#include "view.hpp"

namespace attn {

// "Open a model…": browser, a folder dialog (or the files, dropped); desktop, a folder path.
void open_live_model_control(ViewContext& ctx);  // and the Hub dialog's button beside it
void open_hub_control(ViewContext& ctx);
// The controls panel's section while a model is open: what it is, its text boxes and the next
// tokens. Then the choice of map (model_view.hpp draw_import_controls) once a run is shown.
void draw_live_controls(ViewContext& ctx);
// The same for a model PyTorch runs elsewhere (a link's server=: web/state/served_state.hpp).
void draw_served_controls(ViewContext& ctx);
// A progress bar while a model's files are read, its weights load or it runs; nothing otherwise.
void draw_live_progress(ViewContext& ctx);

}  // namespace attn
