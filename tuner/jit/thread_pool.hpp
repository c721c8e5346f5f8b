#pragma once
// A fixed-size pool of worker threads for NVRTC compilations (NVRTC is thread-safe for distinct programs), at a lower
// priority than the rest of the process. Workers start on the first submit, so a service that only computes cache keys
// spawns none. The destructor finishes every queued job, then joins.
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace ktune::detail {

// The nice value of the pool's threads (0 is normal, 19 the lowest priority).
inline constexpr int kCompileNice = 10;

class ThreadPool {
public:
    explicit ThreadPool(unsigned threads);  // 0: std::thread::hardware_concurrency()
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    // Runs job() on a worker; its result or exception arrives through the future.
    template <typename F>
    std::shared_future<std::invoke_result_t<F>> submit(F job) {
        using R = std::invoke_result_t<F>;
        auto task = std::make_shared<std::packaged_task<R()>>(std::move(job));
        std::shared_future<R> future = task->get_future().share();
        enqueue([task] { (*task)(); });
        return future;
    }

    unsigned size() const { return m_size; }

private:
    void enqueue(std::function<void()> job);
    void work();

    unsigned m_size;
    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::deque<std::function<void()>> m_queue;
    std::vector<std::thread> m_workers;
    bool m_stopping = false;
};

}  // namespace ktune::detail
