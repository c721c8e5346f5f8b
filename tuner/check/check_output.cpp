#include "tuner/check/check_output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace ktune {

namespace {

int severity(Verdict v) {
    switch (v) {
        case Verdict::failed:
            return 0;
        case Verdict::slower:
            return 1;
        case Verdict::unclear:
            return 2;
        case Verdict::faster:
            return 3;
        case Verdict::same:
            return 4;
    }
    return 5;
}

bool measured(const CaseResult& c) { return c.verdict != Verdict::failed && c.decisive().ratio > 0; }
bool has_interval(const Comparison& c) { return c.ratio > 0 && std::isfinite(c.ci_hi); }

std::string duration(double us) {
    if (!(us > 0)) return "n/a";
    if (us < 1000) return fmt::format("{:.2f} us", us);
    return fmt::format("{:.3f} ms", us / 1000);
}

std::string ratio_text(const CaseResult& c) { return measured(c) ? fmt::format("{:.3f}x", c.decisive().ratio) : "n/a"; }

std::string ci_text(const CaseResult& c) {
    const auto& d = c.decisive();
    return measured(c) && has_interval(d) ? fmt::format("[{:.3f}, {:.3f}]", d.ci_lo, d.ci_hi) : "n/a";
}

std::string limit_text(const CaseResult& c) {
    const double t = c.decisive().threshold;
    return t > 0 ? fmt::format("±{:.1f} %", t * 100) : "n/a";
}

std::string change_text(const CaseResult& c) {
    const auto& d = c.decisive();
    if (!measured(c)) return "n/a";
    std::string s = fmt::format("{:+.1f} %", (d.ratio - 1) * 100);
    if (has_interval(d)) s += fmt::format(" [{:+.1f}, {:+.1f}]", (d.ci_lo - 1) * 100, (d.ci_hi - 1) * 100);
    return s;
}

std::string notes_text(const CaseResult& c) {
    std::vector<std::string> notes = c.notes;
    if (!c.decisive().note.empty()) notes.insert(notes.begin(), c.decisive().note);
    return fmt::format("{}", fmt::join(notes, "; "));
}

std::string upper(std::string_view s) {
    std::string out(s);
    for (auto& ch : out) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return out;
}

std::string terminal_verdict(Verdict v) {
    return v == Verdict::slower || v == Verdict::failed ? upper(verdict_name(v)) : std::string(verdict_name(v));
}

// "1 slower, 2 unclear, 10 same" in severity order, skipping zeros.
std::string counts_text(const CheckReport& r) {
    std::vector<std::string> parts;
    for (Verdict v : {Verdict::failed, Verdict::slower, Verdict::unclear, Verdict::faster, Verdict::same})
        if (const int n = r.count(v)) parts.push_back(fmt::format("{} {}", n, verdict_name(v)));
    return parts.empty() ? std::string("no cases") : fmt::format("{}", fmt::join(parts, ", "));
}

std::string plural(int n, std::string_view one, std::string_view many) {
    return fmt::format("{} {}", n, n == 1 ? one : many);
}

// "1 reproduced slowdown, 1 correctness failure" / "no reproduced slowdown"
std::string headline(const CheckReport& r) {
    std::vector<std::string> parts;
    if (const int n = r.count(Verdict::slower))
        parts.push_back(plural(n, "reproduced slowdown", "reproduced slowdowns"));
    if (const int n = r.count(Verdict::failed))
        parts.push_back(plural(n, "correctness failure", "correctness failures"));
    if (parts.empty()) {
        std::string s = "no reproduced slowdown";
        if (const int n = r.count(Verdict::unclear)) s += fmt::format(" ({} unclear)", n);
        return s;
    }
    return fmt::format("{}", fmt::join(parts, ", "));
}

std::string device_text(const CheckReport& r) {
    const auto& d = r.baseline_device;
    if (d.name.empty()) return d.key;
    return d.arch.empty() ? d.name : fmt::format("{} ({})", d.name, d.arch);
}

std::string baseline_path(const CheckReport& r) {
    return r.baseline_path.empty() ? std::string("baseline") : r.baseline_path;
}

// " (revision abc1234, recorded 2025-01-31T12:00:00Z)" or "".
std::string baseline_meta(const CheckReport& r) {
    std::vector<std::string> meta;
    if (!r.baseline_git_revision.empty()) meta.push_back("revision " + r.baseline_git_revision);
    if (!r.baseline_created_at.empty()) meta.push_back("recorded " + r.baseline_created_at);
    return meta.empty() ? std::string() : fmt::format(" ({})", fmt::join(meta, ", "));
}

std::string baseline_origin(const CheckReport& r) { return baseline_path(r) + baseline_meta(r); }

std::string md_cell(std::string_view s) {
    std::string out;
    for (char ch : s) {
        if (ch == '|') {
            out += "\\|";
        } else if (ch == '<') {  // GitHub would take <word> for HTML and drop it
            out += "&lt;";
        } else if (ch == '>') {
            out += "&gt;";
        } else if (ch == '\n' || ch == '\r') {
            out += ' ';
        } else {
            out += ch;
        }
    }
    return out;
}

std::string md_code(std::string_view s) {
    if (s.find('`') != std::string_view::npos) return md_cell(s);
    return "`" + md_cell(s) + "`";
}

std::string md_verdict(Verdict v) {
    switch (v) {
        case Verdict::failed:
            return "❌ failed";
        case Verdict::slower:
            return "❌ slower";
        case Verdict::unclear:
            return "⚠️ unclear";
        case Verdict::faster:
            return "🚀 faster";
        case Verdict::same:
            return "✅ same";
    }
    return "?";
}

// Character data: like attributes, but newlines stay readable.
std::string xml_text(std::string_view s) {
    std::string out;
    for (char ch : s) {
        if (ch == '\n') {
            out += '\n';
        } else {
            out += xml_escape(std::string_view(&ch, 1));
        }
    }
    return out;
}

std::string junit_details(const CaseResult& c) {
    std::string s = fmt::format("case: {}\nconfig: {}\nverdict: {} (first session: {})\n", c.id, c.config_key,
                                verdict_name(c.verdict), verdict_name(c.first_verdict));
    if (c.verdict != Verdict::failed) {
        const auto& d = c.decisive();
        s += fmt::format("baseline p50: {} (n={})\ncurrent p50: {} (n={})\nratio: {} 95 % CI {}, limit {}\n",
                         duration(d.baseline_p50_us), d.n_baseline, duration(d.current_p50_us), d.n_current,
                         ratio_text(c), ci_text(c), limit_text(c));
        s += fmt::format("Mann-Whitney p: {:.3g}, P(current sample > baseline sample): {:.2f}\n", d.mann_whitney_p,
                         d.prob_slower);
    }
    if (c.remeasured)
        s += fmt::format("re-measured: {} interleaved rounds against {}\n", c.rounds, reference_kind_name(c.reference));
    for (const auto& n : c.notes) s += "note: " + n + "\n";
    return s;
}

}  // namespace

std::vector<const CaseResult*> cases_in_output_order(const CheckReport& report) {
    std::vector<const CaseResult*> out;
    for (const auto& c : report.cases) out.push_back(&c);
    std::stable_sort(out.begin(), out.end(), [](const CaseResult* a, const CaseResult* b) {
        if (severity(a->verdict) != severity(b->verdict)) return severity(a->verdict) < severity(b->verdict);
        return a->decisive().ratio > b->decisive().ratio;
    });
    return out;
}

std::string xml_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char ch : s) {
        switch (ch) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&apos;";
                break;
            case '\n':
                out += "&#10;";
                break;
            case '\t':
                out += "&#9;";
                break;
            case '\r':
                out += "&#13;";
                break;
            default:
                if (static_cast<unsigned char>(ch) >= 0x20) out += ch;  // other C0 controls are not XML 1.0
        }
    }
    return out;
}

std::string format_check_table(const CheckReport& report) {
    const std::vector<std::string> header{"verdict", "case",   "config", "baseline", "current",
                                          "ratio",   "95% CI", "limit",  "re",       "note"};
    std::vector<std::vector<std::string>> rows{header};
    for (const CaseResult* c : cases_in_output_order(report)) {
        const auto& d = c->decisive();
        rows.push_back({terminal_verdict(c->verdict), c->id, c->config_key, duration(d.baseline_p50_us),
                        c->verdict == Verdict::failed ? "n/a" : duration(d.current_p50_us), ratio_text(*c), ci_text(*c),
                        limit_text(*c), c->remeasured ? std::to_string(c->rounds) : "-", notes_text(*c)});
    }
    // Widths in code points: "±" is two bytes of UTF-8 but one column.
    auto columns = [](const std::string& s) {
        std::size_t n = 0;
        for (unsigned char ch : s) n += (ch & 0xC0) != 0x80;
        return n;
    };
    std::vector<std::size_t> width(header.size(), 0);
    for (const auto& r : rows)
        for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], columns(r[i]));

    std::string out = fmt::format("ktune check: {} against {}\n", device_text(report), baseline_origin(report));
    if (!report.gpu_relation.empty()) out += fmt::format("on {}\n", report.gpu_relation);
    if (report.device_mismatch_forced)
        out += fmt::format("warning: compared across devices (forced): baseline \"{}\", this device \"{}\"\n",
                           report.baseline_device.key, report.current_device_key);
    if (!report.calibration_mismatch_forced.empty())
        out += fmt::format("warning: compared across GPUs that behave apart (forced): {}\n",
                           report.calibration_mismatch_forced);
    for (const auto& r : rows) {
        std::string line;
        for (std::size_t i = 0; i < r.size(); ++i) {
            const bool right = i >= 3 && i <= 8;  // numbers
            const std::size_t pad = width[i] - columns(r[i]);
            if (i + 1 == r.size()) {
                line += r[i];
            } else if (right) {
                line += std::string(pad, ' ') + r[i] + "  ";
            } else {
                line += r[i] + std::string(pad, ' ') + "  ";
            }
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line + "\n";
    }
    out += fmt::format("{}: {} ({}; {} cases)\n", report.passed() ? "PASSED" : "FAILED", headline(report),
                       counts_text(report), report.cases.size());
    return out;
}

std::string format_check_markdown(const CheckReport& report) {
    std::string out = fmt::format("## {} ktune check {}: {}\n\n", report.passed() ? "✅" : "❌",
                                  report.passed() ? "passed" : "failed", headline(report));
    out += fmt::format("{} cases on **{}** against {}{}: {}.\n\n", report.cases.size(), md_cell(device_text(report)),
                       md_code(baseline_path(report)), md_cell(baseline_meta(report)), counts_text(report));
    if (!report.gpu_relation.empty()) out += fmt::format("Run on {}.\n\n", md_cell(report.gpu_relation));
    if (report.device_mismatch_forced)
        out += fmt::format(
            "> ⚠️ Compared across devices (forced): the baseline was recorded on `{}`, this device is "
            "`{}`. Differences may be the hardware's.\n\n",
            md_cell(report.baseline_device.key), md_cell(report.current_device_key));
    if (!report.calibration_mismatch_forced.empty())
        out += fmt::format(
            "> ⚠️ Compared across GPUs that behave apart (forced): {}. Differences may be the hardware's.\n\n",
            md_cell(report.calibration_mismatch_forced));
    out += "| verdict | case | config | baseline p50 | current p50 | change [95 % CI] | limit | note |\n";
    out += "| --- | --- | --- | ---: | ---: | ---: | ---: | --- |\n";
    for (const CaseResult* c : cases_in_output_order(report)) {
        const auto& d = c->decisive();
        out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", md_verdict(c->verdict), md_code(c->id),
                           md_code(c->config_key), duration(d.baseline_p50_us),
                           c->verdict == Verdict::failed ? "n/a" : duration(d.current_p50_us), change_text(*c),
                           limit_text(*c), md_cell(notes_text(*c)));
    }
    out += fmt::format(
        "\nChange: ratio of medians, current / baseline, with a bootstrap 95 % confidence interval. The limit is "
        "looser for shorter kernels. A first session that looks slower or unclear is measured again in {} interleaved "
        "rounds, and a case is slower only when that re-measurement puts the whole interval above the limit. Unclear "
        "cases do not fail the check.\n",
        report.remeasure_rounds);
    return out;
}

std::string format_check_junit(const CheckReport& report) {
    const int failures = report.count(Verdict::slower) + report.count(Verdict::failed);
    const int skipped = report.count(Verdict::unclear);
    double seconds = 0;
    for (const auto& c : report.cases) seconds += c.seconds;
    const std::string suite = "ktune check: " + device_text(report);

    std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out += fmt::format(
        "<testsuites name=\"ktune check\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" "
        "time=\"{:.3f}\">\n",
        report.cases.size(), failures, skipped, seconds);
    out += fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" "
        "time=\"{:.3f}\">\n",
        xml_escape(suite), report.cases.size(), failures, skipped, seconds);
    out += "    <properties>\n";
    out += fmt::format("      <property name=\"baseline\" value=\"{}\"/>\n", xml_escape(baseline_origin(report)));
    out += fmt::format("      <property name=\"baseline_device\" value=\"{}\"/>\n",
                       xml_escape(report.baseline_device.key));
    out += fmt::format("      <property name=\"device\" value=\"{}\"/>\n", xml_escape(report.current_device_key));
    out += "    </properties>\n";
    for (const CaseResult* c : cases_in_output_order(report)) {
        const std::string classname = "ktune.check." + c->op + (c->variant.empty() ? std::string() : "." + c->variant);
        out += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\">\n", xml_escape(classname),
                           xml_escape(c->problem_key), c->seconds);
        const std::string numbers = fmt::format("{} (limit {})", change_text(*c), limit_text(*c));
        if (c->verdict == Verdict::slower) {
            out += fmt::format("      <failure type=\"slower\" message=\"{}\">{}</failure>\n",
                               xml_escape(fmt::format("slower: {}, reproduced in {} rounds", numbers, c->rounds)),
                               xml_text(junit_details(*c)));
        } else if (c->verdict == Verdict::failed) {
            const std::string status = c->failure ? std::string(status_name(*c->failure)) : "failed";
            out +=
                fmt::format("      <failure type=\"correctness\" message=\"{}\">{}</failure>\n",
                            xml_escape(fmt::format("{}: {}", status, c->failure_message)), xml_text(junit_details(*c)));
        } else if (c->verdict == Verdict::unclear) {
            out += fmt::format(
                "      <skipped message=\"{}\"/>\n",
                xml_escape(fmt::format(
                    "unclear: {}{}", numbers,
                    c->notes.empty() && c->decisive().note.empty() ? std::string() : "; " + notes_text(*c))));
        }
        if (c->verdict != Verdict::slower && c->verdict != Verdict::failed)  // a <failure> carries them already
            out += fmt::format("      <system-out>{}</system-out>\n", xml_text(junit_details(*c)));
        out += "    </testcase>\n";
    }
    out += "  </testsuite>\n</testsuites>\n";
    return out;
}

}  // namespace ktune
