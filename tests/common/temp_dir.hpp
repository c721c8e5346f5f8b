#pragma once
// A fresh folder under the system temp directory, removed with the object: what the unit tests write (databases,
// kernel roots, compile caches, reports) goes here. Shared by every test folder.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace ktune::test {

class TempDir {
public:
    explicit TempDir(const std::string& prefix = "ktune-test") {
        std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
        if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed for " << pattern;
        m_path = pattern;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(m_path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::filesystem::path& path() const { return m_path; }

    // Writes text to a file below the folder, creating parent folders.
    void write(const std::string& relative, const std::string& text) const {
        const std::filesystem::path p = m_path / relative;
        std::filesystem::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary) << text;
    }

private:
    std::filesystem::path m_path;
};

}  // namespace ktune::test
