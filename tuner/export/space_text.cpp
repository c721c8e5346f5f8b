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

LaunchTexts texts_of_launch(const YAML::Node& launch, std::string where) {
    LaunchTexts t;
    t.where = std::move(where);
    t.grid = texts_of(launch["grid"]);
    t.block = texts_of(launch["block"]);
    if (launch["shared_bytes"]) t.shared_bytes = launch["shared_bytes"].as<std::string>();
    if (t.grid.empty() || t.block.empty())
        throw Error(ErrorCategory::bad_input, "the search space has no launch grid and block", t.where);
    return t;
}

YAML::Node top_of(const std::string& yaml_path) {
    const std::string text = read_file(yaml_path, "the search space file");
    // The file was validated when the SearchSpace was loaded: only its launch sections are read here.
    return detail::Located::parse(text, &yaml_path).node();
}

}  // namespace

LaunchTexts read_launch_texts(const std::string& yaml_path, const std::string& alternative) {
    const YAML::Node top = top_of(yaml_path);
    const bool own = !alternative.empty() && top["alternatives"][alternative]["launch"];
    return texts_of_launch(own ? top["alternatives"][alternative]["launch"] : top["launch"],
                           yaml_path + (own ? ": alternatives." + alternative + ".launch" : ": launch"));
}

LaunchTexts read_reference_launch_texts(const std::string& yaml_path) {
    const YAML::Node top = top_of(yaml_path);
    const bool own = static_cast<bool>(top["reference_launch"]);
    return texts_of_launch(own ? top["reference_launch"] : top["launch"],
                           yaml_path + (own ? ": reference_launch" : ": launch"));
}

}  // namespace ktune::export_detail
