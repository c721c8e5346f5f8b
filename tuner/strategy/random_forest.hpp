#pragma once
// A small random-forest regressor (bagged CART trees, a random subset of the features tried at each split), enough
// for the model-based strategy: tens to a few thousand samples of a handful of ordinal features.
#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace ktune {

class RandomForest {
public:
    struct Options {
        int trees = 32;
        int max_depth = 14;
        int min_leaf = 2;
        double feature_fraction = 0.6;  // of the features tried at each split (at least one)
        std::size_t max_samples = 0;    // rows drawn for each tree, at most (0: as many as there are)
    };
    // Rows of x are samples, all of the same width; y one target per row.
    void fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y, std::mt19937_64& rng,
             const Options& options);
    void fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y, std::mt19937_64& rng) {
        fit(x, y, rng, Options{});
    }
    // The mean and the standard deviation of the trees' predictions.
    std::pair<double, double> predict(const std::vector<double>& x) const;
    bool empty() const { return m_trees.empty(); }

private:
    struct Node {
        int feature = -1;  // -1: a leaf
        double threshold = 0;
        int left = -1, right = -1;
        double value = 0;
    };
    using Tree = std::vector<Node>;
    int grow(Tree& tree, std::vector<std::size_t>& rows, std::size_t begin, std::size_t end, int depth,
             const std::vector<std::vector<double>>& x, const std::vector<double>& y, std::mt19937_64& rng,
             const Options& o) const;
    std::vector<Tree> m_trees;
};

}  // namespace ktune
