#include "harness/protocol/protocol.hpp"

#include <limits>

namespace ktune::wire {

// value() with defaults keeps older/newer peers readable: a missing field takes the struct's default.
#define KTUNE_GET(field) r.field = j.value(#field, r.field)

void to_json(json& j, const DeviceProps& d) {
    j = json{{"ordinal", d.ordinal},
             {"name", d.name},
             {"uuid", d.uuid},
             {"pci_bus_id", d.pci_bus_id},
             {"cc_major", d.cc_major},
             {"cc_minor", d.cc_minor},
             {"sm_count", d.sm_count},
             {"l2_bytes", d.l2_bytes},
             {"memory_bytes", d.memory_bytes},
             {"memory_clock_khz", d.memory_clock_khz},
             {"memory_bus_bits", d.memory_bus_bits},
             {"sm_clock_khz", d.sm_clock_khz},
             {"max_shared_per_block_optin", d.max_shared_per_block_optin},
             {"driver_version", d.driver_version}};
}
void from_json(const json& j, DeviceProps& r) {
    KTUNE_GET(ordinal);
    KTUNE_GET(name);
    KTUNE_GET(uuid);
    KTUNE_GET(pci_bus_id);
    KTUNE_GET(cc_major);
    KTUNE_GET(cc_minor);
    KTUNE_GET(sm_count);
    KTUNE_GET(l2_bytes);
    KTUNE_GET(memory_bytes);
    KTUNE_GET(memory_clock_khz);
    KTUNE_GET(memory_bus_bits);
    KTUNE_GET(sm_clock_khz);
    KTUNE_GET(max_shared_per_block_optin);
    KTUNE_GET(driver_version);
}

void to_json(json& j, const Buffer& b) {
    j = json{{"name", b.name}, {"elem", b.elem}, {"elements", b.elements}, {"role", b.role},
             {"lo", b.lo},     {"hi", b.hi},     {"seed", b.seed}};
    if (b.pad_lengths >= 0)
        j["pad"] = json{{"lengths", b.pad_lengths},
                        {"heads", b.pad_heads},
                        {"tokens", b.pad_tokens},
                        {"token_elements", b.pad_token_elements}};
}
void from_json(const json& j, Buffer& r) {
    KTUNE_GET(name);
    KTUNE_GET(elem);
    KTUNE_GET(elements);
    KTUNE_GET(role);
    KTUNE_GET(lo);
    KTUNE_GET(hi);
    KTUNE_GET(seed);
    if (const auto pad = j.find("pad"); pad != j.end()) {
        r.pad_lengths = pad->at("lengths").get<int>();
        r.pad_heads = pad->value("heads", r.pad_heads);
        r.pad_tokens = pad->at("tokens").get<std::int64_t>();
        r.pad_token_elements = pad->at("token_elements").get<std::int64_t>();
    }
}

void to_json(json& j, const Arg& a) {
    j = json{{"kind", a.kind}, {"buffer", a.buffer}, {"integer", a.integer}, {"real", a.real}};
    if (a.kind == "tensor_map") {
        j["dims"] = a.dims;
        j["box"] = a.box;
        j["swizzle"] = a.swizzle;
    }
}
void from_json(const json& j, Arg& r) {
    KTUNE_GET(kind);
    KTUNE_GET(buffer);
    KTUNE_GET(integer);
    KTUNE_GET(real);
    KTUNE_GET(dims);
    KTUNE_GET(box);
    KTUNE_GET(swizzle);
}

void to_json(json& j, const Launch& l) {
    j = json{{"cubin", l.cubin},
             {"lowered", l.lowered},
             {"grid", l.grid},
             {"block", l.block},
             {"shared_bytes", l.shared_bytes}};
    if (!l.library.empty()) {
        j["library"] = l.library;
        j["config"] = l.config;
    }
    if (!l.tensor_maps.empty()) j["tensor_maps"] = l.tensor_maps;
}
void from_json(const json& j, Launch& r) {
    KTUNE_GET(cubin);
    KTUNE_GET(lowered);
    KTUNE_GET(grid);
    KTUNE_GET(block);
    KTUNE_GET(shared_bytes);
    r.library = j.value("library", std::string());
    r.config = j.value("config", NamedValues());
    r.tensor_maps = j.value("tensor_maps", std::vector<Arg>());
}

std::string l2_state(const TimingOptions& t) {
    if (!t.cold_l2) return "hot";
    return t.clean_flush ? "cold" : "cold-dirty";
}

void to_json(json& j, const TimingOptions& t) {
    j = json{{"cold_l2", t.cold_l2},         {"clean_flush", t.clean_flush},    {"warmup", t.warmup},
             {"min_samples", t.min_samples}, {"max_samples", t.max_samples},    {"target_rel", t.target_rel},
             {"time_cap_s", t.time_cap_s},   {"cupti_samples", t.cupti_samples}};
}
void from_json(const json& j, TimingOptions& r) {
    KTUNE_GET(cold_l2);
    KTUNE_GET(clean_flush);
    KTUNE_GET(warmup);
    KTUNE_GET(min_samples);
    KTUNE_GET(max_samples);
    KTUNE_GET(target_rel);
    KTUNE_GET(time_cap_s);
    KTUNE_GET(cupti_samples);
}

void to_json(json& j, const EvaluateResult& r) {
    j = json{{"status", r.status},
             {"message", r.message},
             {"mismatches", r.mismatches},
             {"max_abs_error", r.max_abs_error},
             {"samples_us", r.samples_us},
             {"time_cap_hit", r.time_cap_hit},
             {"cupti_samples_us", r.cupti_samples_us}};
}
void from_json(const json& j, EvaluateResult& r) {
    KTUNE_GET(status);
    KTUNE_GET(message);
    KTUNE_GET(mismatches);
    // JSON has no infinity: the error of a mismatch involving NaN or Inf (ktune_compare's +inf) travels as null.
    if (const auto e = j.find("max_abs_error"); e != j.end())
        r.max_abs_error = e->is_null() ? std::numeric_limits<double>::infinity() : e->get<double>();
    KTUNE_GET(samples_us);
    KTUNE_GET(time_cap_hit);
    KTUNE_GET(cupti_samples_us);
}

#undef KTUNE_GET

}  // namespace ktune::wire

namespace ktune {
void to_json(nlohmann::json& j, const Tolerance& t) { j = nlohmann::json{{"rtol", t.rtol}, {"atol", t.atol}}; }
void from_json(const nlohmann::json& j, Tolerance& t) {
    t.rtol = j.value("rtol", t.rtol);
    t.atol = j.value("atol", t.atol);
}
}  // namespace ktune
