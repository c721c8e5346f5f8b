#include "tuner/session/work_queue.hpp"

#include <algorithm>
#include <exception>
#include <thread>

#include <fmt/format.h>

#include "core/error.hpp"

namespace ktune {

WorkQueue::WorkQueue(const std::vector<std::size_t>& parts, const std::vector<std::size_t>& order)
    : m_parts_left(parts) {
    std::vector<std::size_t> problems = order;
    if (problems.empty())
        for (std::size_t p = 0; p < parts.size(); ++p) problems.push_back(p);
    std::vector<char> seen(parts.size(), 0);
    for (const std::size_t p : problems) {
        if (p >= parts.size() || seen[p])
            throw Error(ErrorCategory::internal,
                        fmt::format("work queue: the order names problem {} twice or of {}", p, parts.size()));
        seen[p] = 1;
    }
    if (problems.size() != parts.size())
        throw Error(ErrorCategory::internal, "work queue: the order leaves problems out");
    for (const std::size_t p : problems) {
        for (std::size_t i = 0; i < parts[p]; ++i) m_ready.push_back(WorkTask{p, i, false});
        if (parts[p] == 0) m_ready.push_back(WorkTask{p, 0, true});
        m_tasks_left += parts[p] + 1;
    }
}

std::optional<WorkTask> WorkQueue::next() {
    std::unique_lock lock(m_mutex);
    m_changed.wait(lock, [&] { return m_stopped || !m_ready.empty() || m_running == 0; });
    if (m_stopped || m_ready.empty()) return std::nullopt;
    WorkTask t = m_ready.front();
    m_ready.pop_front();
    ++m_running;
    return t;
}

void WorkQueue::done(const WorkTask& t) {
    {
        std::lock_guard lock(m_mutex);
        --m_running;
        --m_tasks_left;
        // A finished problem's closing task goes first, so its results are final before later problems start.
        if (!t.finish && --m_parts_left[t.problem] == 0) m_ready.push_front(WorkTask{t.problem, 0, true});
    }
    m_changed.notify_all();
}

int WorkQueue::give_back(const WorkTask& t) {
    int times = 0;
    {
        std::lock_guard lock(m_mutex);
        --m_running;
        m_ready.push_front(t);
        auto it = std::find_if(m_given_back.begin(), m_given_back.end(), [&](const auto& g) { return g.first == t; });
        if (it == m_given_back.end()) it = m_given_back.insert(m_given_back.end(), {t, 0});
        times = ++it->second;
    }
    m_changed.notify_all();
    return times;
}

void WorkQueue::stop() {
    {
        std::lock_guard lock(m_mutex);
        m_stopped = true;
    }
    m_changed.notify_all();
}

bool WorkQueue::finished() const {
    std::lock_guard lock(m_mutex);
    return m_tasks_left == 0;
}

void run_lanes(std::size_t lanes, WorkQueue& queue, const std::function<void(std::size_t, const WorkTask&)>& run,
               const std::function<void(std::size_t, const std::string&)>& on_lost) {
    constexpr int kMaxLanesPerTask = 2;
    std::mutex mutex;  // failure, lost, a_task_lost_too_many
    std::exception_ptr failure;
    std::vector<std::string> lost(lanes);
    bool a_task_lost_too_many = false;
    auto lane = [&](std::size_t i) {
        while (const std::optional<WorkTask> t = queue.next()) {
            try {
                run(i, *t);
                queue.done(*t);
            } catch (const LaneLost& l) {
                const int times = queue.give_back(*t);
                {
                    std::lock_guard lock(mutex);
                    lost[i] = l.reason;
                    a_task_lost_too_many = a_task_lost_too_many || times >= kMaxLanesPerTask;
                }
                if (times >= kMaxLanesPerTask) queue.stop();
                if (on_lost) on_lost(i, l.reason);
                return;
            } catch (...) {
                {
                    std::lock_guard lock(mutex);
                    if (!failure) failure = std::current_exception();
                }
                queue.stop();
                return;
            }
        }
    };
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < lanes; ++i) threads.emplace_back(lane, i);
    for (std::thread& t : threads) t.join();
    if (failure) std::rethrow_exception(failure);
    const bool all_lost = std::all_of(lost.begin(), lost.end(), [](const std::string& r) { return !r.empty(); });
    if (queue.finished() || (!all_lost && !a_task_lost_too_many)) return;
    std::string reasons;
    for (const std::string& r : lost)
        if (!r.empty()) reasons += "\n  " + r;
    throw Error(ErrorCategory::device, all_lost ? "every GPU was lost before the work was done:" + reasons
                                                : fmt::format("one task lost {} GPUs in turn, so it is not the GPUs:{}",
                                                              kMaxLanesPerTask, reasons));
}

}  // namespace ktune
