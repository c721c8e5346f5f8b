#pragma once
// Work spread over several GPUs of one device as they free up (`ktune tune --gpus`). It knows nothing of GPUs: a lane
// is whatever runs tasks (a thread driving one GPU's worker), so the scheduling is tested with fake lanes
// (tests/unit/session/test_work_queue.cpp).
//
// A problem's configurations are measured in parts, any part on any lane; once every part of a problem is done, its
// finish task (confirming its leaders) runs, before any part of a later problem (in the queue's order).
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ktune {

struct WorkTask {
    std::size_t problem = 0;  // index into the run's problems
    std::size_t part = 0;     // which part of its configurations (a measure task)
    bool finish = false;      // the problem's closing task, after all its parts
    bool operator==(const WorkTask&) const = default;
};

// Thrown by a lane's task when its lane cannot go on (the GPU's worker cannot start again): the task goes back to the
// queue for another lane, and the lane is dropped.
struct LaneLost {
    std::string reason;
};

class WorkQueue {
public:
    // parts[i]: how many measure tasks problem i has (0: only its finish task). order: the problems in the order their
    // tasks are handed out (empty: 0, 1, ...), e.g. the costliest first, so that no long problem starts last.
    explicit WorkQueue(const std::vector<std::size_t>& parts, const std::vector<std::size_t>& order = {});

    // The next task, waiting while none is ready but some are running (their problem's finish task may follow);
    // nullopt when everything is done or the queue was stopped.
    std::optional<WorkTask> next();
    void done(const WorkTask& t);
    // A task whose lane was lost: another lane takes it next. Returns how often this task has been given back.
    int give_back(const WorkTask& t);
    // No more tasks are handed out (a time limit, a failure); running ones finish.
    void stop();
    bool finished() const;  // every task done

private:
    mutable std::mutex m_mutex;
    std::condition_variable m_changed;
    std::deque<WorkTask> m_ready;
    std::vector<std::size_t> m_parts_left;  // per problem: parts not done yet
    std::size_t m_tasks_left = 0;           // parts and finish tasks not done yet
    std::size_t m_running = 0;
    std::vector<std::pair<WorkTask, int>> m_given_back;
    bool m_stopped = false;
};

// Runs the queue's tasks on `lanes` threads, lane i calling run(i, task) for each task it takes. A lane whose task
// throws LaneLost is dropped (on_lost(i, reason), called under no lock) and the task given back; a task that has
// cost two lanes stops the run, as does any other exception, which is rethrown once every lane has stopped. Throws
// Error(device) when every lane was lost with work left.
void run_lanes(std::size_t lanes, WorkQueue& queue, const std::function<void(std::size_t, const WorkTask&)>& run,
               const std::function<void(std::size_t, const std::string&)>& on_lost);

}  // namespace ktune
