// image_layout.hpp: the Image view's figure (web/ui/image_view.cpp) for a vision model's run
// (figure.hpp LiveRun::picture): the picture as the model saw it, fitted in the area with its
// patch grid, and one query token's attention over the patches laid over it as a heat overlay in
// the colormap (from 0 to the largest weight on a patch, said in the legend); the tokens before
// the patches ([CLS], DINOv2's registers) are chips beside the picture, each with its weight.
//
//   pass 1: the columns: the chips', the picture's (as large as fits, its aspect kept), the legend's
//           (a portrait box, a phone's: the chips in rows above the picture instead)
//   pass 2: the overlay: a cell per patch (colour and opacity by its weight over the largest),
//           the grid's lines, the query's outline
//   pass 3: the chips, the legend and the caption
#pragma once

#include "figure_layout.hpp"

#include <string>
#include <vector>

namespace attn {

struct ImageInput {
    Box box;                     // the view's area
    float scale = 1.0f;
    bool dark = true;
    int colormap = 0;
    int picture_width = 0, picture_height = 0;  // the picture's pixels (sized_picture)
    int rows = 0, cols = 0, patch = 0;          // the patch grid (patch: pixels a side)
    std::vector<std::string> tokens;            // every token; the patches are the last rows × cols (or `cells`)
    // A vision-language model's (idefics3): the token of each cell, rows × cols row by row (its
    // tiles' image tokens over the picture they cover); the tokens drawn as chips, in a strip of
    // rows under the picture (the text); the global view, a second picture of global_size pixels
    // a side beside the first, its global_rows² cells' tokens. Empty: a vision model's (the last
    // rows × cols tokens are the patches, those before them the chips).
    std::vector<int> cells, chip_tokens;
    int global_size = 0, global_rows = 0;
    std::vector<int> global_cells;
    std::string global_label;                   // over the global view
    int tiles_rows = 0, tiles_cols = 0;         // the tiles the picture was cut into (their borders drawn), or 0
    std::vector<float> weights;                 // the query's weight on each token (empty: no overlay)
    int query = -1;                             // the query's token (−1: none)
    std::vector<bool> hidden;                   // per token: hidden from every query (the experiment), drawn
                                                // hatched over the picture or the chip; empty: none
    std::string caption;                        // under the picture
    std::string legend;                         // the legend's title
};

struct ImageLayout {
    std::vector<Item> items;  // drawn over the picture, in order
    Box picture;              // where the picture goes (under the items)
    Box grid;                 // the patches' part of it (a remainder of pixels past the last patch is outside)
    float cell_w = 0.0f, cell_h = 0.0f;
    std::vector<Box> chips;   // the chips' tokens (ImageInput::chip_tokens, or those before the patches), in order
    std::vector<int> chip_tokens;
    std::vector<int> cells;   // each cell's token, rows × cols
    Box global;               // the global view's picture (empty: none), its cells global_cell a side
    float global_cell = 0.0f;
    std::vector<int> global_cells;
    int first = 0;            // the first patch's token
    float top = 0.0f;         // the overlay's scale: the largest weight on a patch
    // The token under (x, y): a patch's or a chip's, else −1.
    int hit(float x, float y) const;
};

ImageLayout lay_out_image(const ImageInput& in, const TextMeasure& measure);

}  // namespace attn
