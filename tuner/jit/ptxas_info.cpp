// parse_ptxas_info: reads the resource report that ptxas prints with -v (NVRTC puts it in the program log). The format,
// as NVRTC 13.0 prints it for sm_90:
//   ptxas info    : Compiling entry function '_Z1kILi256EEvPf' for 'sm_90'
//   ptxas info    : Function properties for _Z1kILi256EEvPf
//   ptxas         .     816 bytes stack frame, 608 bytes spill stores, 824 bytes spill loads
//   ptxas info    : Used 24 registers, used 1 barriers, 1024 bytes smem, 816 bytes cumulative stack size
//   ptxas info    : Compile time = 34.665 ms
// Older toolkits print "Used 10 registers, 1024 bytes smem, 352 bytes cmem[0]" and indent the properties line with
// spaces only; both are handled. Non-entry (__noinline__) functions get their own "Function properties" block.
#include <cctype>
#include <charconv>
#include <string_view>
#include <vector>

#include "tuner/jit/compile_service.hpp"

namespace ktune {

namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
    std::vector<std::string_view> lines;
    while (!text.empty()) {
        const std::size_t end = text.find('\n');
        std::string_view line = text.substr(0, end);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        lines.push_back(line);
        if (end == std::string_view::npos) break;
        text.remove_prefix(end + 1);
    }
    return lines;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

int to_int(std::string_view digits) {
    int value = -1;
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    return ec == std::errc() && ptr != digits.data() ? value : -1;
}

// The integer written just before `suffix` ("608 bytes spill stores" -> 608); -1 when the suffix is absent.
int number_before(std::string_view line, std::string_view suffix) {
    const std::size_t at = line.find(suffix);
    if (at == std::string_view::npos) return -1;
    std::size_t begin = at;
    while (begin > 0 && line[begin - 1] == ' ') --begin;
    std::size_t end = begin;
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
    return to_int(line.substr(begin, end - begin));
}

// The integer written just after `prefix` ("Used 24 registers" with prefix "Used " -> 24); -1 when absent.
int number_after(std::string_view line, std::string_view prefix) {
    const std::size_t at = line.find(prefix);
    if (at == std::string_view::npos) return -1;
    std::size_t begin = at + prefix.size();
    std::size_t end = begin;
    while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end]))) ++end;
    return to_int(line.substr(begin, end - begin));
}

bool is_entry_line(std::string_view line) { return line.find("Compiling entry function '") != std::string_view::npos; }

bool is_entry_line_for(std::string_view line, std::string_view name) {
    const std::string_view marker = "Compiling entry function '";
    const std::size_t at = line.find(marker);
    if (at == std::string_view::npos) return false;
    const std::string_view rest = line.substr(at + marker.size());
    return rest.substr(0, name.size()) == name && rest.size() > name.size() && rest[name.size()] == '\'';
}

bool is_properties_line_for(std::string_view line, std::string_view name) {
    const std::string_view marker = "Function properties for ";
    const std::size_t at = line.find(marker);
    return at != std::string_view::npos && trim(line.substr(at + marker.size())) == name;
}

void set_if_found(int& field, int value) {
    if (value >= 0) field = value;
}

}  // namespace

CompileInfo parse_ptxas_info(const std::string& log, const std::string& lowered_name) {
    CompileInfo info;
    if (lowered_name.empty()) return info;
    const std::vector<std::string_view> lines = split_lines(log);

    // The entry's block runs from its "Compiling entry function" line to the next one: the "Used" line in it is the
    // entry's. Without such a line (an unexpected format) only the properties block can be attributed.
    std::size_t begin = 0, end = 0;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        if (!is_entry_line_for(lines[i], lowered_name)) continue;
        begin = i + 1;
        end = begin;
        while (end < lines.size() && !is_entry_line(lines[end])) ++end;
        break;
    }
    for (std::size_t i = begin; i < end; ++i) {
        if (number_after(lines[i], "Used ") >= 0 && lines[i].find(" registers") != std::string_view::npos) {
            info.registers = number_after(lines[i], "Used ");
            set_if_found(info.static_shared_bytes, number_before(lines[i], "bytes smem"));
            break;
        }
    }

    // The properties block may sit inside the entry's block or elsewhere (ptxas does not promise an order).
    for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
        if (!is_properties_line_for(lines[i], lowered_name)) continue;
        const std::string_view props = lines[i + 1];
        set_if_found(info.stack_bytes, number_before(props, "bytes stack frame"));
        set_if_found(info.spill_store_bytes, number_before(props, "bytes spill stores"));
        set_if_found(info.spill_load_bytes, number_before(props, "bytes spill loads"));
        break;
    }
    return info;
}

}  // namespace ktune
