// ktune-worker: measures kernels on one GPU for ktune. Reads one JSON request per line on stdin, writes one JSON
// response per line on stdout (harness/protocol/protocol.hpp). Started and restarted by ktune; not meant for people.
#include <cstdio>
#include <iostream>
#include <string>

#include "harness/protocol/protocol.hpp"
#include "harness/worker/driver.hpp"
#include "harness/worker/worker.hpp"

using nlohmann::json;
using namespace ktune;

namespace {

void respond(const json& j) { std::cout << j.dump() << '\n' << std::flush; }

json failure(const std::string& message, bool fatal) { return {{"ok", false}, {"error", message}, {"fatal", fatal}}; }

}  // namespace

int main() {
    std::ios::sync_with_stdio(false);
    std::unique_ptr<worker::Worker> w;
    try {
        w = std::make_unique<worker::Worker>();
    } catch (const worker::DriverError& e) {
        // No usable driver or device: say so once and exit; the host turns this into a "no GPU" message.
        respond(failure(std::string("CUDA driver initialisation failed: ") + e.what(), true));
        return 3;
    }
    std::string line;
    while (std::getline(std::cin, line)) {
        if (line.empty()) continue;
        json response;
        try {
            const json req = json::parse(line);
            const std::string cmd = req.at("cmd").get<std::string>();
            if (cmd == "hello") {
                response = w->hello();
            } else if (cmd == "open") {
                response = w->open(req.at("device").get<int>());
            } else if (cmd == "load_utility") {
                response = w->load_utility(req.at("cubin").get<std::string>(),
                                           req.at("names").get<std::map<std::string, std::string>>());
            } else if (cmd == "ceilings") {
                response = w->ceilings(req.value("copy_bytes", std::size_t{1} << 30));
            } else if (cmd == "setup") {
                response =
                    w->setup(req.at("buffers").get<std::vector<wire::Buffer>>(),
                             req.at("args").get<std::vector<wire::Arg>>(), req.at("reference").get<wire::Launch>());
            } else if (cmd == "evaluate") {
                const wire::EvaluateResult r =
                    w->evaluate(req.at("launch").get<wire::Launch>(), req.at("tolerance").get<Tolerance>(),
                                req.value("timing", wire::TimingOptions{}));
                response = {{"result", r}};
                if (w->poisoned()) response["fatal"] = true;
            } else if (cmd == "shutdown") {
                respond({{"ok", true}});
                return 0;
            } else {
                respond(failure("unknown command '" + cmd + "'", false));
                continue;
            }
            response["ok"] = true;
        } catch (const worker::DriverError& e) {
            response = failure(e.what(), e.sticky());
        } catch (const std::exception& e) {
            response = failure(e.what(), false);
        }
        respond(response);
        if (response.value("fatal", false)) return 4;  // the context is unusable; the host starts a new worker
    }
    return 0;
}
