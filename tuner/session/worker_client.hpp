#pragma once
// The host's handle on one ktune-worker process (one per GPU). Requests go as JSON lines with a deadline; a worker
// that dies or misses its deadline is killed and reported as WorkerLost, and can be started again.
#include <sys/types.h>

#include <string>

#include <nlohmann/json.hpp>

namespace ktune {

// The worker process ended (crash, fault that poisoned its context, kill) or missed a deadline.
struct WorkerLost {
    bool timed_out = false;
    std::string message;  // what happened, with the tail of the worker's stderr
};

class WorkerClient {
public:
    // `worker_path`: the ktune-worker executable. Nothing starts until start().
    explicit WorkerClient(std::string worker_path);
    ~WorkerClient();
    WorkerClient(const WorkerClient&) = delete;
    WorkerClient& operator=(const WorkerClient&) = delete;

    // Starts the process and says hello. Throws Error(no_gpu) when the worker cannot load the driver or sees no
    // device, with the reason (e.g. "libcuda.so.1: cannot open shared object file").
    nlohmann::json start();
    bool running() const { return m_pid > 0; }

    // Sends one request and waits for its response up to `timeout_s`. Throws WorkerLost when the process dies or
    // times out (the process is killed then), Error(device) when the worker answers ok=false.
    nlohmann::json request(const nlohmann::json& req, double timeout_s);

    // Kills the process (SIGKILL) and reaps it.
    void kill();
    // The last lines the worker wrote to stderr.
    std::string stderr_tail(std::size_t max_bytes = 2000) const;

private:
    std::string m_worker_path;
    pid_t m_pid = -1;
    int m_to_worker = -1;
    int m_from_worker = -1;
    std::string m_stderr_path;
    std::string m_read_buffer;

    std::string exit_description();
};

// Where the ktune-worker executable is: $KTUNE_WORKER, else next to the running ktune executable.
std::string default_worker_path();

}  // namespace ktune
