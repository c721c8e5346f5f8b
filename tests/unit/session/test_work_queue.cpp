// The multi-GPU scheduler with fake lanes: no GPU, no worker process.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "core/error.hpp"
#include "tuner/session/work_queue.hpp"

namespace ktune {
namespace {

struct Log {
    std::mutex mutex;
    std::vector<std::pair<std::size_t, WorkTask>> runs;  // (lane, task), in the order they ran
    void add(std::size_t lane, const WorkTask& t) {
        std::lock_guard lock(mutex);
        runs.emplace_back(lane, t);
    }
};

TEST(WorkQueue, HandsOutProblemsInTheGivenOrder) {
    WorkQueue q({1, 2, 1}, {2, 0, 1});
    std::vector<WorkTask> got;
    for (int i = 0; i < 4; ++i) {
        const std::optional<WorkTask> t = q.next();
        ASSERT_TRUE(t);
        got.push_back(*t);
    }
    EXPECT_EQ(got[0].problem, 2u);
    EXPECT_EQ(got[1].problem, 0u);
    EXPECT_EQ(got[2].problem, 1u);
    EXPECT_EQ(got[3].problem, 1u);
    EXPECT_THROW(WorkQueue({1, 1}, {0, 0}), Error);
    EXPECT_THROW(WorkQueue({1, 1}, {1}), Error);
}

TEST(WorkQueue, EveryPartRunsOnceAndEachProblemFinishesAfterAllItsParts) {
    WorkQueue q({3, 0, 5});
    Log log;
    run_lanes(
        4, q,
        [&](std::size_t lane, const WorkTask& t) {
            std::this_thread::sleep_for(std::chrono::microseconds(200 * (lane + 1)));
            log.add(lane, t);
        },
        nullptr);
    EXPECT_TRUE(q.finished());
    std::map<std::size_t, int> parts;
    std::map<std::size_t, std::size_t> finished_at;
    for (std::size_t i = 0; i < log.runs.size(); ++i) {
        const WorkTask& t = log.runs[i].second;
        if (t.finish) {
            EXPECT_FALSE(finished_at.contains(t.problem)) << "finished twice";
            finished_at[t.problem] = i;
        } else {
            EXPECT_FALSE(finished_at.contains(t.problem)) << "a part of problem " << t.problem << " after its finish";
            ++parts[t.problem];
        }
    }
    EXPECT_EQ(parts[0], 3);
    EXPECT_EQ(parts[2], 5);
    EXPECT_EQ(finished_at.size(), 3u);
}

TEST(WorkQueue, WorkIsSpreadOverTheLanesAsTheyFreeUp) {
    WorkQueue q({16});
    Log log;
    run_lanes(
        2, q,
        [&](std::size_t lane, const WorkTask& t) {
            // Lane 1 is four times slower: it should get about a fifth of the parts, not half.
            std::this_thread::sleep_for(std::chrono::milliseconds(lane == 0 ? 2 : 8));
            log.add(lane, t);
        },
        nullptr);
    int slow = 0;
    for (const auto& [lane, t] : log.runs) slow += lane == 1 && !t.finish;
    EXPECT_GE(slow, 1);
    EXPECT_LE(slow, 6);
}

TEST(WorkQueue, ALostLaneIsDroppedAndItsTaskFinishesOnAnother) {
    WorkQueue q({6});
    Log log;
    std::vector<std::string> dropped;
    std::mutex dropped_mutex;
    std::atomic<bool> lost{false};
    run_lanes(
        3, q,
        [&](std::size_t lane, const WorkTask& t) {
            if (lane == 1) throw LaneLost{"GPU 1: the worker did not start again"};
            // The other lanes hold their first tasks until lane 1 has taken one and been lost: otherwise they could
            // finish all seven before lane 1's thread asks for work (seen in CI), and nothing would be dropped.
            for (int i = 0; i < 5000 && !lost; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            log.add(lane, t);
        },
        [&](std::size_t lane, const std::string& reason) {
            std::lock_guard lock(dropped_mutex);
            dropped.push_back(std::to_string(lane) + ": " + reason);
            lost = true;
        });
    EXPECT_TRUE(q.finished());
    ASSERT_EQ(dropped.size(), 1u);
    EXPECT_EQ(dropped.front(), "1: GPU 1: the worker did not start again");
    EXPECT_EQ(log.runs.size(), 7u);  // six parts and the finish, none on lane 1
    for (const auto& [lane, t] : log.runs) EXPECT_NE(lane, 1u);
}

TEST(WorkQueue, EveryLaneLostIsAnErrorWithTheirReasons) {
    WorkQueue q({4});
    try {
        run_lanes(
            2, q, [&](std::size_t lane, const WorkTask&) { throw LaneLost{"GPU " + std::to_string(lane) + " gone"}; },
            nullptr);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::device);
        EXPECT_NE(e.message().find("GPU 0 gone"), std::string::npos);
        EXPECT_NE(e.message().find("GPU 1 gone"), std::string::npos);
    }
}

TEST(WorkQueue, ATaskThatCostsTwoLanesStopsTheRun) {
    WorkQueue q({3});
    std::atomic<int> ran = 0;
    EXPECT_THROW(run_lanes(
                     4, q,
                     [&](std::size_t, const WorkTask& t) {
                         if (t.part == 1) throw LaneLost{"the part kills its GPU"};
                         ++ran;
                     },
                     nullptr),
                 Error);
    EXPECT_FALSE(q.finished());
}

TEST(WorkQueue, AnyOtherErrorStopsEveryLaneAndIsRethrown) {
    WorkQueue q({100});
    std::atomic<int> ran = 0;
    EXPECT_THROW(run_lanes(
                     3, q,
                     [&](std::size_t, const WorkTask& t) {
                         if (t.part == 2) throw Error(ErrorCategory::compile, "the reference does not compile");
                         ++ran;
                     },
                     nullptr),
                 Error);
    EXPECT_LT(ran.load(), 100);
}

TEST(WorkQueue, StoppingHandsOutNothingMore) {
    WorkQueue q({50});
    std::atomic<int> ran = 0;
    run_lanes(
        2, q,
        [&](std::size_t, const WorkTask&) {
            if (++ran == 5) q.stop();
        },
        nullptr);
    EXPECT_LE(ran.load(), 6);
    EXPECT_FALSE(q.finished());
}

}  // namespace
}  // namespace ktune
