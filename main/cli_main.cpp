// The attnviz command without the window: `compute` only (builds without GL, e.g. sanitizers).
#include "cli.hpp"
#include "pool.hpp"

#include <cstdio>

int main(int argc, char** argv) {
    attn::kernels::keep_freed_memory();  // a model's run allocates block by block (pool.hpp)
    int code = attn::run_cli(argc, argv);
    if (code == attn::kNotACommand) {
        std::fprintf(stderr, "attnviz: this build has no window; use: attnviz compute SCENE.json\n");
        return 2;
    }
    return code;
}
