#include "tuner/export/space_text.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/file.hpp"
#include "tuner/space/located_yaml.hpp"

namespace ktune::export_detail {
namespace {

std::vector<std::string> texts_of(const YAML::Node& node) {
    std::vector<std::string> out;
    if (node && node.IsSequence())
        for (const auto& item : node) out.push_back(item.as<std::string>());
    return out;
}

}  // namespace

LaunchTexts read_launch_texts(const std::string& yaml_path, const std::string& alternative) {
    const std::string text = read_file(yaml_path, "the search space file");
    // The file was validated when the SearchSpace was loaded: only its launch section is read here.
    const detail::Located root = detail::Located::parse(text, &yaml_path);
    const YAML::Node top = root.node();
    const bool own = !alternative.empty() && top["alternatives"][alternative]["launch"];
    const YAML::Node launch = own ? top["alternatives"][alternative]["launch"] : top["launch"];
    LaunchTexts t;
    t.where = yaml_path + (own ? ": alternatives." + alternative + ".launch" : ": launch");
    t.grid = texts_of(launch["grid"]);
    t.block = texts_of(launch["block"]);
    if (launch["shared_bytes"]) t.shared_bytes = launch["shared_bytes"].as<std::string>();
    if (t.grid.empty() || t.block.empty())
        throw Error(ErrorCategory::bad_input, "the search space has no launch grid and block", t.where);
    return t;
}

}  // namespace ktune::export_detail
