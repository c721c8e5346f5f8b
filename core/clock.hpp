#pragma once
// Wall-clock time as ktune writes it everywhere (store rows, reports, headers, baselines): ISO-8601 UTC to the second.
#include <string>

namespace ktune {

std::string utc_now_iso();  // "2026-11-27T06:32:40Z"

}  // namespace ktune
