#include "harness/worker/cupti_timer.hpp"

#include <cupti.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace ktune::worker {
namespace {

std::mutex g_mutex;
std::vector<CuptiKernelTimer::Record> g_records;  // filled by CUPTI's callback

constexpr size_t kBufferBytes = 1 << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    // CUPTI wants 8-byte alignment.
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
    *size = kBufferBytes;
    *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_size) {
    CUpti_Activity* record = nullptr;
    std::lock_guard<std::mutex> lock(g_mutex);
    while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
        if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(record);
            g_records.push_back({k->name ? k->name : "", k->start, double(k->end - k->start) / 1000.0});
        }
    }
    std::free(buffer);
}

bool g_registered = false;

std::string cupti_error(CUptiResult r, const char* call) {
    const char* s = nullptr;
    cuptiGetResultString(r, &s);
    return std::string(call) + ": " + (s ? s : "unknown CUPTI error");
}

}  // namespace

bool CuptiKernelTimer::start() {
    if (!g_registered) {
        if (CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed); r != CUPTI_SUCCESS) {
            m_error = cupti_error(r, "cuptiActivityRegisterCallbacks");
            return false;
        }
        g_registered = true;
    }
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        g_records.clear();
    }
    if (CUptiResult r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); r != CUPTI_SUCCESS) {
        m_error = cupti_error(r, "cuptiActivityEnable");
        return false;
    }
    m_recording = true;
    return true;
}

CuptiKernelTimer::~CuptiKernelTimer() {
    if (m_recording) (void)stop();
}

std::vector<CuptiKernelTimer::Record> CuptiKernelTimer::stop() {
    m_recording = false;
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cuptiActivityFlushAll(1);
    std::lock_guard<std::mutex> lock(g_mutex);
    std::vector<Record> out = std::move(g_records);
    g_records.clear();
    std::stable_sort(out.begin(), out.end(), [](const Record& a, const Record& b) { return a.start_ns < b.start_ns; });
    return out;
}

}  // namespace ktune::worker
