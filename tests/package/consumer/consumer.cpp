// Uses the installed libktune: loads a space by name (from the installed share/ktune) and a T1 file, lists
// configurations, reads the best results from a database and exports a header. No GPU.
//   consumer T1_FILE DB OUT_DIR
#include <cstdio>
#include <string>

#include <ktune/ktune.hpp>

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: consumer T1_FILE DB OUT_DIR\n");
        return 2;
    }
    try {
        namespace api = ktune::api;
        std::printf("ktune %s, root %s\n", api::version().c_str(), api::resolve_paths().root.c_str());
        const api::Space rmsnorm = api::Space::load("rmsnorm");
        const std::string problem = rmsnorm.problems().front();
        std::printf("space %s/%s: %zu problems, %zu configurations at %s\n", rmsnorm.op().c_str(),
                    rmsnorm.variant().c_str(), rmsnorm.problems().size(), rmsnorm.configurations(problem).size(),
                    problem.c_str());
        const api::Space t1 = api::Space::load(argv[1]);
        std::printf("T1 space %s: %zu configurations at %s\n", t1.op().c_str(),
                    t1.configurations(t1.problems().front()).size(), t1.problems().front().c_str());

        api::Paths paths;
        paths.db = argv[2];
        for (const api::Best& b : api::best("rmsnorm/fwd", "H100 PCIe", paths))
            std::printf("best %s %s %s %.1f us\n", b.device.c_str(), b.problem.c_str(), b.config.c_str(), b.time_us);

        api::ExportSettings e;
        e.op = "rmsnorm";
        e.out_dir = argv[3];
        e.paths = paths;
        const api::ExportedHeader h = api::export_header(e);
        std::printf("exported %s: %zu entries\n", h.function.c_str(), h.entries);

        try {
            api::Space::load("no_such_space");
        } catch (const ktune::Error& err) {
            std::printf("bad input caught: %s\n", err.category() == ktune::ErrorCategory::bad_input ? "yes" : "no");
        }
    } catch (const ktune::Error& err) {
        std::fprintf(stderr, "consumer: %s: %s\n", err.where().c_str(), err.message().c_str());
        return 1;
    }
    return 0;
}
