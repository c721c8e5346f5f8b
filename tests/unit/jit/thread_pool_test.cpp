#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tuner/jit/thread_pool.hpp"

namespace ktune {
namespace {

TEST(ThreadPool, ReturnsEachJobsResultThroughItsFuture) {
    detail::ThreadPool pool(3);
    std::vector<std::shared_future<int>> futures;
    for (int i = 0; i < 20; ++i) futures.push_back(pool.submit([i] { return i * i; }));
    for (int i = 0; i < 20; ++i) EXPECT_EQ(futures[i].get(), i * i);
}

TEST(ThreadPool, PropagatesAJobsExceptionThroughItsFuture) {
    detail::ThreadPool pool(2);
    auto future = pool.submit([]() -> int { throw std::runtime_error("boom"); });
    EXPECT_THROW(future.get(), std::runtime_error);
}

TEST(ThreadPool, FinishesQueuedJobsBeforeTheDestructorReturns) {
    std::atomic<int> done{0};
    {
        detail::ThreadPool pool(1);
        for (int i = 0; i < 10; ++i) {
            pool.submit([&done] {
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
                return ++done;
            });
        }
    }
    EXPECT_EQ(done.load(), 10);
}

TEST(ThreadPool, UsesHardwareConcurrencyWhenAskedForZeroThreads) {
    detail::ThreadPool pool(0);
    const unsigned hw = std::thread::hardware_concurrency();
    EXPECT_EQ(pool.size(), hw == 0 ? 1u : hw);
}

TEST(ThreadPool, RunsJobsConcurrently) {
    detail::ThreadPool pool(2);
    std::atomic<int> running{0};
    std::atomic<int> peak{0};
    auto job = [&] {
        const int now = ++running;
        for (int seen = peak.load(); now > seen && !peak.compare_exchange_weak(seen, now);) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        --running;
        return 0;
    };
    auto a = pool.submit(job);
    auto b = pool.submit(job);
    a.get();
    b.get();
    EXPECT_EQ(peak.load(), 2);
}

}  // namespace
}  // namespace ktune

namespace ktune::detail {
namespace {

// Compiles yield to the threads that time kernels: a pool thread runs kCompileNice above the process's nice.
TEST(ThreadPool, RunsItsJobsAtALowerPriorityThanTheProcess) {
    const int process_nice = getpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)));
    ThreadPool pool(1);
    const int job_nice =
        pool.submit([] { return getpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid))); }).get();
    EXPECT_EQ(job_nice, std::min(process_nice + kCompileNice, 19));
}

}  // namespace
}  // namespace ktune::detail
