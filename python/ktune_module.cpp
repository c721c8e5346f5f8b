// The Python module `ktune`: the library facade (include/ktune/ktune.hpp) as Python functions and classes, for a
// notebook or a script. Keyword arguments carry the facade's settings; results are plain objects with attributes.
//
//   import ktune
//   space = ktune.Space.load("rmsnorm")
//   space.configurations(space.problems()[0])
//   ktune.tune("rmsnorm", dtypes=["bf16"], budget=50)      # on a GPU
//   ktune.best("rmsnorm", db="results/ktune.db")         # no GPU
//   ktune.export_header("rmsnorm", variant="fwd", out_dir="generated")
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <ktune/ktune.hpp>

namespace py = pybind11;
using namespace ktune::api;

namespace {

Paths paths_of(const std::string& root, const std::string& db, const std::string& cache_dir,
               const std::string& worker) {
    return Paths{root, db, cache_dir, worker};
}

template <typename T>
std::string repr_of(const char* type, const T& fields) {
    std::string out = std::string(type) + "(";
    bool first = true;
    for (const auto& [name, value] : fields) {
        out += (first ? "" : ", ") + name + "=" + value;
        first = false;
    }
    return out + ")";
}

std::string quoted(const std::string& s) { return py::repr(py::str(s)).cast<std::string>(); }

}  // namespace

PYBIND11_MODULE(ktune, m) {
    m.doc() = "ktune: autotune CUDA kernel templates on this GPU, read the best configurations, export headers";
    m.attr("__version__") = version();

    // ktune::Error keeps its category: bad input is a ValueError, the rest (no GPU, results database, ...) an Error.
    static py::exception<ktune::Error> error(m, "Error", PyExc_RuntimeError);
    static py::exception<ktune::Error> bad_input(m, "BadInput", PyExc_ValueError);
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const ktune::Error& e) {
            const std::string text = e.where().empty() ? e.message() : e.where() + ": " + e.message();
            if (e.category() == ktune::ErrorCategory::bad_input)
                bad_input(text.c_str());
            else
                error(text.c_str());
        }
    });

    py::class_<Paths>(m, "Paths", "Where ktune finds its kernels, the results database, the compile cache, the worker")
        .def(py::init(&paths_of), py::arg("root") = "", py::arg("db") = "", py::arg("cache_dir") = "",
             py::arg("worker") = "")
        .def_readwrite("root", &Paths::root)
        .def_readwrite("db", &Paths::db)
        .def_readwrite("cache_dir", &Paths::cache_dir)
        .def_readwrite("worker", &Paths::worker)
        .def("__repr__", [](const Paths& p) {
            return repr_of("Paths", std::vector<std::pair<std::string, std::string>>{{"root", quoted(p.root)},
                                                                                     {"db", quoted(p.db)},
                                                                                     {"cache_dir", quoted(p.cache_dir)},
                                                                                     {"worker", quoted(p.worker)}});
        });
    m.def("resolve_paths", &resolve_paths, py::arg("paths") = Paths{},
          "The paths with every default filled in ($KTUNE_ROOT, $KTUNE_DB, ... else the installed ones)");

    py::class_<Parameter>(m, "Parameter")
        .def_readonly("name", &Parameter::name)
        .def_readonly("kind", &Parameter::kind)
        .def_readonly("values", &Parameter::values)
        .def_readonly("doc", &Parameter::doc)
        .def("__repr__", [](const Parameter& p) {
            std::string values;
            for (const std::string& v : p.values) values += (values.empty() ? "" : ", ") + v;
            return "Parameter(" + p.name + ": " + p.kind + " [" + values + "])";
        });

    py::class_<Space>(m, "Space", "A search space: ktune's YAML, or a Kernel Tuner / KTT T1 file (*.json)")
        .def_static("load", &Space::load, py::arg("path_or_name"), py::arg("root") = "",
                    "Loads and validates a space file, or a space of the root by name ('rmsnorm')")
        .def_property_readonly("file", &Space::file)
        .def_property_readonly("op", &Space::op)
        .def_property_readonly("variant", &Space::variant)
        .def("kernels", &Space::kernels, "The alternatives' names; [''] for a space of one kernel")
        .def("parameters", &Space::parameters, py::arg("kernel") = "")
        .def("problems", &Space::problems, "Problem keys: 'bf16:M=4096,H=8192'")
        .def("configurations", &Space::configurations, py::arg("problem"), py::arg("kernel") = "",
             "The configurations worth measuring at a problem, as keys")
        .def("__repr__",
             [](const Space& s) { return "Space(" + s.op() + "/" + s.variant() + " from " + s.file() + ")"; });

    py::class_<Best>(m, "Best", "The best stored configuration of one (op, variant, device, problem)")
        .def_readonly("op", &Best::op)
        .def_readonly("variant", &Best::variant)
        .def_readonly("kernel", &Best::kernel)
        .def_readonly("device", &Best::device)
        .def_readonly("problem", &Best::problem)
        .def_readonly("config", &Best::config)
        .def_readonly("time_us", &Best::time_us)
        .def_readonly("ranked_by", &Best::ranked_by)
        .def_readonly("p50_us", &Best::p50_us)
        .def_readonly("gbps", &Best::gbps)
        .def_readonly("measured_at", &Best::measured_at)
        .def("__repr__", [](const Best& b) {
            return "Best(" + b.problem + ": " + b.config + (b.kernel.empty() ? "" : " [" + b.kernel + "]") + ", " +
                   py::repr(py::float_(b.time_us)).cast<std::string>() + " us)";
        });

    py::class_<Progress>(m, "Progress")
        .def_readonly("done", &Progress::done)
        .def_readonly("total", &Progress::total)
        .def_readonly("phase", &Progress::phase)
        .def_readonly("notice", &Progress::notice)
        .def_readonly("problem", &Progress::problem)
        .def_readonly("config", &Progress::config);

    py::class_<TuneResult>(m, "TuneResult")
        .def_readonly("compile_only", &TuneResult::compile_only)
        .def_readonly("no_gpu_reason", &TuneResult::no_gpu_reason)
        .def_readonly("arch", &TuneResult::arch)
        .def_readonly("device", &TuneResult::device)
        .def_readonly("run_id", &TuneResult::run_id)
        .def_readonly("best", &TuneResult::best)
        .def_readonly("status_counts", &TuneResult::status_counts)
        .def_readonly("compiled", &TuneResult::compiled)
        .def_readonly("compile_failed", &TuneResult::compile_failed)
        .def_readonly("compile_errors", &TuneResult::compile_errors)
        .def_readonly("elapsed_s", &TuneResult::elapsed_s);

    m.def(
        "tune",
        [](const std::string& space, const Paths& paths, const std::string& strategy, std::int64_t budget,
           double time_limit_s, std::vector<std::string> dtypes, std::vector<std::string> problems,
           std::vector<std::string> shapes, std::vector<std::string> configs, std::vector<std::string> kernels,
           bool force, bool compile_only, const std::string& arch, int device, bool hot_l2, std::uint64_t seed,
           const ProgressCallback& progress) {
            TuneSettings s;
            s.paths = paths;
            s.strategy = strategy;
            s.budget = budget;
            s.time_limit_s = time_limit_s;
            s.dtypes = std::move(dtypes);
            s.problems = std::move(problems);
            s.shapes = std::move(shapes);
            s.configs = std::move(configs);
            s.kernels = std::move(kernels);
            s.force = force;
            s.compile_only = compile_only;
            s.arch = arch;
            s.device = device;
            s.hot_l2 = hot_l2;
            s.seed = seed;
            py::gil_scoped_release unlocked;  // a tuning takes minutes; the progress callback takes the GIL back
            return tune(space, s, progress);
        },
        py::arg("space"), py::kw_only(), py::arg("paths") = Paths{}, py::arg("strategy") = "auto",
        py::arg("budget") = 0, py::arg("time_limit_s") = 0.0, py::arg("dtypes") = std::vector<std::string>{},
        py::arg("problems") = std::vector<std::string>{}, py::arg("shapes") = std::vector<std::string>{},
        py::arg("configs") = std::vector<std::string>{}, py::arg("kernels") = std::vector<std::string>{},
        py::arg("force") = false, py::arg("compile_only") = false, py::arg("arch") = "", py::arg("device") = 0,
        py::arg("hot_l2") = false, py::arg("seed") = 1, py::arg("progress") = ProgressCallback{},
        "Tunes a space (a file or a name) on the GPU and stores every result; a compile-only sweep without a GPU");

    m.def(
        "best",
        [](const std::string& op, const std::string& device, const std::string& db, Paths paths) {
            if (!db.empty()) paths.db = db;
            return best(op, device, paths);
        },
        py::arg("op"), py::arg("device") = "", py::kw_only(), py::arg("db") = "", py::arg("paths") = Paths{},
        "The best stored configuration per problem of an op ('rmsnorm' or 'rmsnorm/fwd') on every device whose key "
        "or name contains `device`, from the database `db` (or paths.db); no GPU needed");

    py::class_<ExportedHeader>(m, "ExportedHeader")
        .def_readonly("path", &ExportedHeader::path)
        .def_readonly("function", &ExportedHeader::function)
        .def_readonly("devices", &ExportedHeader::devices)
        .def_readonly("entries", &ExportedHeader::entries)
        .def_readonly("configs", &ExportedHeader::configs)
        .def_readonly("warnings", &ExportedHeader::warnings);
    m.def(
        "export_header",
        [](const std::string& op, const std::string& out_dir, const std::string& variant, const std::string& space,
           std::vector<std::string> devices, const Paths& paths) {
            return export_header(ExportSettings{op, variant, out_dir, space, std::move(devices), paths});
        },
        py::arg("op"), py::kw_only(), py::arg("out_dir"), py::arg("variant") = "", py::arg("space") = "",
        py::arg("devices") = std::vector<std::string>{}, py::arg("paths") = Paths{},
        "Writes the stored best configurations of an op as a C++ header with a dispatcher");
}
