#include "reports/report_data.hpp"

#include <algorithm>

namespace ktune {

const PeerTiming* ProblemRow::peer(std::string_view label) const {
    for (const PeerTiming& p : peers)
        if (p.label == label) return &p;
    return nullptr;
}

std::vector<std::string> ReportData::peer_labels() const {
    std::vector<std::string> out;
    for (const OpSection& s : sections) out.insert(out.end(), s.peer_labels.begin(), s.peer_labels.end());
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

}  // namespace ktune
