#include "tuner/jit/thread_pool.hpp"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/error.hpp"

namespace ktune::detail {

ThreadPool::ThreadPool(unsigned threads) : m_size(threads) {
    if (m_size == 0) m_size = std::thread::hardware_concurrency();
    if (m_size == 0) m_size = 1;  // hardware_concurrency() may not know
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    m_wake.notify_all();
    for (std::thread& t : m_workers) t.join();
}

void ThreadPool::enqueue(std::function<void()> job) {
    {
        std::lock_guard lock(m_mutex);
        if (m_stopping)
            throw Error(ErrorCategory::internal, "job submitted to a thread pool that is shutting down",
                        "jit thread pool");
        m_queue.push_back(std::move(job));
        if (m_workers.empty()) {
            m_workers.reserve(m_size);
            for (unsigned i = 0; i < m_size; ++i) m_workers.emplace_back([this] { work(); });
        }
    }
    m_wake.notify_one();
}

void ThreadPool::work() {
    // Compiles yield to measuring: with every core compiling a cold cache, the threads that time kernels (this
    // process's GPU lanes, the workers' launch loops) compete with NVRTC for the cores (whether that is what slows two
    // GPUs tuning together is not yet measured: docs/design.md, Scale). Linux's nice is per thread; where it cannot be
    // lowered, the compile runs at the normal priority.
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), kCompileNice);
    for (;;) {
        std::function<void()> job;
        {
            std::unique_lock lock(m_mutex);
            m_wake.wait(lock, [this] { return m_stopping || !m_queue.empty(); });
            // Stopping still drains the queue: the destructor promises every queued job runs.
            if (m_queue.empty()) return;
            job = std::move(m_queue.front());
            m_queue.pop_front();
        }
        job();  // a packaged_task: exceptions land in its future, never here
    }
}

}  // namespace ktune::detail
