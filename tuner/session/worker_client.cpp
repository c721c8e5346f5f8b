#include "tuner/session/worker_client.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/error.hpp"

extern char** environ;

namespace ktune {

std::string default_worker_path() {
    if (const char* env = std::getenv("KTUNE_WORKER"); env && *env) return env;
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) return (self.parent_path() / "ktune-worker").string();
    return "ktune-worker";
}

WorkerClient::WorkerClient(std::string worker_path) : m_worker_path(std::move(worker_path)) {
    // Ignore SIGPIPE: a worker that died while we write must surface as WorkerLost, not kill ktune.
    signal(SIGPIPE, SIG_IGN);
}

WorkerClient::~WorkerClient() {
    if (m_pid > 0) {
        try {
            request({{"cmd", "shutdown"}}, 5.0);
        } catch (...) {
        }
        kill();
    }
    if (!m_stderr_path.empty()) std::filesystem::remove(m_stderr_path);
}

nlohmann::json WorkerClient::start() {
    if (m_pid > 0) kill();
    if (!std::filesystem::exists(m_worker_path))
        throw Error(ErrorCategory::internal,
                    fmt::format("the GPU worker executable is missing: {} (set KTUNE_WORKER)", m_worker_path));
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
        throw Error(ErrorCategory::internal, std::string("pipe: ") + std::strerror(errno));
    if (m_stderr_path.empty()) {
        char tmpl[] = "/tmp/ktune-worker-stderr-XXXXXX";
        const int fd = mkstemp(tmpl);
        if (fd >= 0) close(fd);
        m_stderr_path = tmpl;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addopen(&actions, 2, m_stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char* argv[] = {const_cast<char*>(m_worker_path.c_str()), nullptr};
    const int rc = posix_spawn(&m_pid, m_worker_path.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    if (rc != 0) {
        close(in[1]);
        close(out[0]);
        m_pid = -1;
        throw Error(ErrorCategory::internal, fmt::format("cannot start {}: {}", m_worker_path, std::strerror(rc)));
    }
    m_to_worker = in[1];
    m_from_worker = out[0];
    m_read_buffer.clear();
    try {
        return request({{"cmd", "hello"}}, 60.0);
    } catch (const WorkerLost& lost) {
        throw Error(ErrorCategory::no_gpu, "no usable NVIDIA GPU: the GPU worker could not start. " + lost.message);
    } catch (const Error& e) {
        kill();
        throw Error(ErrorCategory::no_gpu, "no usable NVIDIA GPU: " + e.message());
    }
}

std::string WorkerClient::stderr_tail(std::size_t max_bytes) const {
    std::ifstream f(m_stderr_path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string s = ss.str();
    if (s.size() > max_bytes) s = "..." + s.substr(s.size() - max_bytes);
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

std::string WorkerClient::exit_description() {
    int status = 0;
    std::string what = "the worker exited";
    if (m_pid > 0 && waitpid(m_pid, &status, 0) == m_pid) {
        if (WIFEXITED(status))
            what = fmt::format("the worker exited with code {}", WEXITSTATUS(status));
        else if (WIFSIGNALED(status))
            what =
                fmt::format("the worker was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
    }
    m_pid = -1;
    close(m_to_worker);
    close(m_from_worker);
    m_to_worker = m_from_worker = -1;
    const std::string tail = stderr_tail();
    return tail.empty() ? what : what + "; its last output: " + tail;
}

void WorkerClient::kill() {
    if (m_pid <= 0) return;
    ::kill(m_pid, SIGKILL);
    waitpid(m_pid, nullptr, 0);
    m_pid = -1;
    close(m_to_worker);
    close(m_from_worker);
    m_to_worker = m_from_worker = -1;
}

nlohmann::json WorkerClient::request(const nlohmann::json& req, double timeout_s) {
    if (m_pid <= 0) throw WorkerLost{false, "the worker is not running"};
    const std::string line = req.dump() + "\n";
    for (std::size_t off = 0; off < line.size();) {
        const ssize_t n = write(m_to_worker, line.data() + off, line.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw WorkerLost{false, exit_description()};
        off += static_cast<std::size_t>(n);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
        // A complete line may already be buffered; lines that are not JSON (a library writing to stdout) are skipped.
        for (auto nl = m_read_buffer.find('\n'); nl != std::string::npos; nl = m_read_buffer.find('\n')) {
            std::string msg = m_read_buffer.substr(0, nl);
            m_read_buffer.erase(0, nl + 1);
            auto j = nlohmann::json::parse(msg, nullptr, false);
            if (j.is_discarded() || !j.is_object() || !j.contains("ok")) continue;
            if (!j["ok"].get<bool>()) {
                const std::string error = j.value("error", std::string("unknown worker error"));
                if (j.value("fatal", false)) {
                    const std::string exit = exit_description();
                    throw WorkerLost{false, error + " (" + exit + ")"};
                }
                throw Error(ErrorCategory::device, error, "ktune-worker");
            }
            if (j.value("fatal", false)) {
                // The result is valid but the context is gone: reap the worker so the next request restarts it.
                exit_description();
            }
            return j;
        }
        const auto left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
        if (left <= 0) {
            kill();
            const std::string tail = stderr_tail();
            throw WorkerLost{true, fmt::format("no answer within {:.1f} s; the worker was killed{}", timeout_s,
                                               tail.empty() ? "" : "; its last output: " + tail)};
        }
        pollfd p{m_from_worker, POLLIN, 0};
        const int ms = static_cast<int>(std::min(left * 1000.0, double(INT_MAX)));
        const int rc = poll(&p, 1, std::max(ms, 1));
        if (rc < 0 && errno == EINTR) continue;
        if (rc <= 0) continue;
        char buf[65536];
        const ssize_t n = read(m_from_worker, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw WorkerLost{false, exit_description()};
        m_read_buffer.append(buf, static_cast<std::size_t>(n));
    }
}

}  // namespace ktune
