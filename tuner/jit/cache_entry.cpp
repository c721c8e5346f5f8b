#include "tuner/jit/cache_entry.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "core/error.hpp"

namespace ktune::detail {

namespace fs = std::filesystem;

namespace {

// A small JSON reader and writer for the sidecar. nlohmann_json belongs to the protocol module, and the sidecar needs
// only objects, arrays, strings and numbers.
struct Json {
    enum class Type { null, boolean, number, string, array, object } type = Type::null;
    bool boolean = false;
    double number = 0;
    std::string string;
    std::vector<Json> array;
    std::vector<std::pair<std::string, Json>> object;

    const Json* find(std::string_view key) const {
        for (const auto& [k, v] : object) {
            if (k == key) return &v;
        }
        return nullptr;
    }
};

class JsonParser {
public:
    explicit JsonParser(std::string_view text) : m_text(text) {}

    Json parse_document() {
        Json value = parse_value();
        skip_space();
        if (m_pos != m_text.size()) fail("trailing characters");
        return value;
    }

private:
    [[noreturn]] void fail(const char* what) const {
        throw std::runtime_error(fmt::format("JSON: {} at offset {}", what, m_pos));
    }

    void skip_space() {
        while (m_pos < m_text.size() && std::strchr(" \t\r\n", m_text[m_pos]) != nullptr) ++m_pos;
    }

    char peek() {
        skip_space();
        if (m_pos >= m_text.size()) fail("unexpected end");
        return m_text[m_pos];
    }

    void expect(char c) {
        if (peek() != c) fail("unexpected character");
        ++m_pos;
    }

    bool consume_word(std::string_view word) {
        if (m_text.substr(m_pos, word.size()) != word) return false;
        m_pos += word.size();
        return true;
    }

    Json parse_value() {
        Json v;
        const char c = peek();
        if (c == '{') {
            v.type = Json::Type::object;
            ++m_pos;
            if (peek() == '}') {
                ++m_pos;
                return v;
            }
            for (;;) {
                if (peek() != '"') fail("expected a key");
                std::string key = parse_string();
                expect(':');
                v.object.emplace_back(std::move(key), parse_value());
                if (peek() == ',') {
                    ++m_pos;
                    continue;
                }
                expect('}');
                return v;
            }
        }
        if (c == '[') {
            v.type = Json::Type::array;
            ++m_pos;
            if (peek() == ']') {
                ++m_pos;
                return v;
            }
            for (;;) {
                v.array.push_back(parse_value());
                if (peek() == ',') {
                    ++m_pos;
                    continue;
                }
                expect(']');
                return v;
            }
        }
        if (c == '"') {
            v.type = Json::Type::string;
            v.string = parse_string();
            return v;
        }
        if (consume_word("true") || consume_word("false")) {
            v.type = Json::Type::boolean;
            v.boolean = m_text[m_pos - 4] == 't';  // "true" is four characters, "false" five
            return v;
        }
        if (consume_word("null")) return v;
        v.type = Json::Type::number;
        const char* begin = m_text.data() + m_pos;
        const auto [end, ec] = std::from_chars(begin, m_text.data() + m_text.size(), v.number);
        if (ec != std::errc() || end == begin) fail("bad value");
        m_pos += static_cast<std::size_t>(end - begin);
        return v;
    }

    unsigned parse_hex4() {
        if (m_pos + 4 > m_text.size()) fail("short \\u escape");
        unsigned code = 0;
        const auto [end, ec] = std::from_chars(m_text.data() + m_pos, m_text.data() + m_pos + 4, code, 16);
        if (ec != std::errc() || end != m_text.data() + m_pos + 4) fail("bad \\u escape");
        m_pos += 4;
        return code;
    }

    static void append_utf8(std::string& out, unsigned code) {
        if (code < 0x80) {
            out += char(code);
        } else if (code < 0x800) {
            out += char(0xC0 | (code >> 6));
            out += char(0x80 | (code & 0x3F));
        } else if (code < 0x10000) {
            out += char(0xE0 | (code >> 12));
            out += char(0x80 | ((code >> 6) & 0x3F));
            out += char(0x80 | (code & 0x3F));
        } else {
            out += char(0xF0 | (code >> 18));
            out += char(0x80 | ((code >> 12) & 0x3F));
            out += char(0x80 | ((code >> 6) & 0x3F));
            out += char(0x80 | (code & 0x3F));
        }
    }

    std::string parse_string() {
        expect('"');
        std::string out;
        for (;;) {
            if (m_pos >= m_text.size()) fail("unterminated string");
            const char c = m_text[m_pos++];
            if (c == '"') return out;
            if (c != '\\') {
                out += c;
                continue;
            }
            if (m_pos >= m_text.size()) fail("unterminated escape");
            const char e = m_text[m_pos++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    unsigned code = parse_hex4();
                    if (code >= 0xD800 && code < 0xDC00 && consume_word("\\u")) {
                        const unsigned low = parse_hex4();
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                    }
                    append_utf8(out, code);
                    break;
                }
                default: fail("bad escape");
            }
        }
    }

    std::string_view m_text;
    std::size_t m_pos = 0;
};

// Bytes >= 0x80 pass through: the log is UTF-8 (or close enough) and only this module reads it back.
std::string json_string(std::string_view s) {
    std::string out = "\"";
    for (const char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", unsigned(c));
                else out += c;
        }
    }
    return out + "\"";
}

const std::string* get_string(const Json& object, std::string_view key) {
    const Json* v = object.find(key);
    return v != nullptr && v->type == Json::Type::string ? &v->string : nullptr;
}

bool get_int(const Json& object, std::string_view key, int& out) {
    const Json* v = object.find(key);
    if (v == nullptr || v->type != Json::Type::number) return false;
    out = static_cast<int>(v->number);
    return true;
}

bool read_whole_file(const fs::path& path, std::string& text) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    std::ostringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
    return !in.bad();
}

bool is_elf_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    return in.read(magic, 4) && std::memcmp(magic, "\x7f" "ELF", 4) == 0;
}

[[noreturn]] void throw_io(const std::string& what, const fs::path& path, int err) {
    throw Error(ErrorCategory::store, what + ": " + std::strerror(err), path.string());
}

}  // namespace

fs::path cubin_path(const fs::path& cache_dir, const std::string& key) { return cache_dir / (key + ".cubin"); }
fs::path sidecar_path(const fs::path& cache_dir, const std::string& key) { return cache_dir / (key + ".json"); }

void write_file_atomically(const fs::path& path, const std::string& bytes) {
    // Unique per process and per call: two threads or two ktune processes writing the same entry never share a
    // temporary, and the last rename wins with identical content.
    static std::atomic<unsigned long> counter{0};
    const fs::path temp = path.parent_path() / fmt::format(".{}.tmp-{}-{}-{}", path.filename().string(), ::getpid(),
                                                           std::hash<std::thread::id>{}(std::this_thread::get_id()),
                                                           counter++);
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw_io("cannot create a cache file", temp, errno);
    std::size_t written = 0;
    while (written < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int err = errno;
            ::close(fd);
            ::unlink(temp.c_str());
            throw_io("cannot write a cache file", temp, err);
        }
        written += static_cast<std::size_t>(n);
    }
    // fsync before rename: after a power loss the entry is either complete or absent, never empty.
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        const int err = errno;
        ::unlink(temp.c_str());
        throw_io("cannot flush a cache file", temp, err);
    }
    if (::rename(temp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(temp.c_str());
        throw_io("cannot rename a cache file into place", path, err);
    }
}

std::string entry_to_json(const CacheEntry& entry) {
    std::string out = "{\n";
    out += fmt::format("  \"format\": {},\n", json_string(k_cache_format));
    out += fmt::format("  \"key\": {},\n", json_string(entry.key));
    out += fmt::format("  \"arch\": {},\n", json_string(entry.arch));
    out += fmt::format("  \"nvrtc_version\": {},\n", json_string(entry.nvrtc_version));
    out += fmt::format("  \"source_path\": {},\n", json_string(entry.source_path));
    out += fmt::format("  \"options\": {},\n", json_string(entry.options));
    out += fmt::format("  \"compile_seconds\": {},\n", entry.compile_seconds);
    out += "  \"kernels\": [";
    for (std::size_t i = 0; i < entry.kernels.size(); ++i) {
        const CompiledKernel& k = entry.kernels[i];
        out += i == 0 ? "\n" : ",\n";
        out += fmt::format(
            "    {{\"name_expression\": {}, \"lowered_name\": {}, \"registers\": {}, \"spill_store_bytes\": {}, "
            "\"spill_load_bytes\": {}, \"stack_bytes\": {}, \"static_shared_bytes\": {}}}",
            json_string(k.name_expression), json_string(k.lowered_name), k.info.registers, k.info.spill_store_bytes,
            k.info.spill_load_bytes, k.info.stack_bytes, k.info.static_shared_bytes);
    }
    out += entry.kernels.empty() ? "],\n" : "\n  ],\n";
    out += fmt::format("  \"log\": {}\n", json_string(entry.log));
    out += "}\n";
    return out;
}

std::optional<CacheEntry> entry_from_json(const std::string& json) {
    Json root;
    try {
        root = JsonParser(json).parse_document();
    } catch (const std::runtime_error&) {
        return std::nullopt;
    }
    if (root.type != Json::Type::object) return std::nullopt;
    const std::string* format = get_string(root, "format");
    if (format == nullptr || *format != k_cache_format) return std::nullopt;

    CacheEntry entry;
    const std::pair<std::string*, const char*> strings[] = {
        {&entry.key, "key"},         {&entry.arch, "arch"}, {&entry.nvrtc_version, "nvrtc_version"},
        {&entry.source_path, "source_path"}, {&entry.options, "options"}, {&entry.log, "log"},
    };
    for (const auto& [field, name] : strings) {
        const std::string* s = get_string(root, name);
        if (s == nullptr) return std::nullopt;
        *field = *s;
    }
    if (const Json* seconds = root.find("compile_seconds"); seconds != nullptr && seconds->type == Json::Type::number) {
        entry.compile_seconds = seconds->number;
    }
    const Json* kernels = root.find("kernels");
    if (kernels == nullptr || kernels->type != Json::Type::array) return std::nullopt;
    for (const Json& k : kernels->array) {
        if (k.type != Json::Type::object) return std::nullopt;
        CompiledKernel kernel;
        const std::string* expr = get_string(k, "name_expression");
        const std::string* lowered = get_string(k, "lowered_name");
        if (expr == nullptr || lowered == nullptr) return std::nullopt;
        kernel.name_expression = *expr;
        kernel.lowered_name = *lowered;
        if (!get_int(k, "registers", kernel.info.registers) ||
            !get_int(k, "spill_store_bytes", kernel.info.spill_store_bytes) ||
            !get_int(k, "spill_load_bytes", kernel.info.spill_load_bytes) ||
            !get_int(k, "stack_bytes", kernel.info.stack_bytes) ||
            !get_int(k, "static_shared_bytes", kernel.info.static_shared_bytes)) {
            return std::nullopt;
        }
        entry.kernels.push_back(std::move(kernel));
    }
    return entry;
}

void write_cache_entry(const fs::path& cache_dir, const CacheEntry& entry, const std::string& cubin) {
    write_file_atomically(cubin_path(cache_dir, entry.key), cubin);
    write_file_atomically(sidecar_path(cache_dir, entry.key), entry_to_json(entry));
}

std::optional<CacheEntry> read_cache_entry(const fs::path& cache_dir, const std::string& key) {
    std::string json;
    if (!read_whole_file(sidecar_path(cache_dir, key), json)) return std::nullopt;
    std::optional<CacheEntry> entry = entry_from_json(json);
    if (!entry || entry->key != key) return std::nullopt;
    if (!is_elf_file(cubin_path(cache_dir, key))) return std::nullopt;
    return entry;
}

}  // namespace ktune::detail
