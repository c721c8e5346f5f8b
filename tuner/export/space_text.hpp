#pragma once
// Internal to tuner/export: the text of a search space's launch expressions. SearchSpace evaluates them but does not
// expose their text, which the header generator translates to C++; this reads them from the YAML file through the
// space module's own YAML layer. (A SearchSpace::launch_spec() accessor would make this file unnecessary.)
#include <string>
#include <vector>

namespace ktune::export_detail {

struct LaunchTexts {
    std::vector<std::string> grid;   // 1..3 expressions
    std::vector<std::string> block;  // 1..3 expressions
    std::string shared_bytes = "0";
    std::string where;  // "file: launch"
};

// The launch of the file's kernel, or of one of its alternatives (SearchSpace::alternative(): its own launch
// section, else the top level's). Throws Error(bad_input) naming the file when it cannot be read or has no launch
// section.
LaunchTexts read_launch_texts(const std::string& yaml_path, const std::string& alternative = "");
// The reference kernel's launch (reference_launch:; the kernel's launch when the file has none, as the space reads
// it). Throws as read_launch_texts.
LaunchTexts read_reference_launch_texts(const std::string& yaml_path);

}  // namespace ktune::export_detail
