#include "tuner/strategy/random_forest.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ktune {

void RandomForest::fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y, std::mt19937_64& rng,
                       const Options& o) {
    m_trees.clear();
    if (x.empty()) return;
    std::uniform_int_distribution<std::size_t> row(0, x.size() - 1);
    for (int t = 0; t < o.trees; ++t) {
        std::vector<std::size_t> sample(o.max_samples ? std::min(o.max_samples, x.size()) : x.size());
        for (auto& r : sample) r = row(rng);  // bootstrap
        Tree tree;
        grow(tree, sample, 0, sample.size(), 0, x, y, rng, o);
        m_trees.push_back(std::move(tree));
    }
}

int RandomForest::grow(Tree& tree, std::vector<std::size_t>& rows, std::size_t begin, std::size_t end, int depth,
                       const std::vector<std::vector<double>>& x, const std::vector<double>& y, std::mt19937_64& rng,
                       const Options& o) const {
    const int id = int(tree.size());
    tree.push_back(Node{});
    const std::size_t n = end - begin;
    double sum = 0, sum2 = 0;
    for (std::size_t k = begin; k < end; ++k) {
        sum += y[rows[k]];
        sum2 += y[rows[k]] * y[rows[k]];
    }
    tree[id].value = sum / double(n);
    const double sse = sum2 - sum * sum / double(n);
    if (depth >= o.max_depth || n < std::size_t(2 * o.min_leaf) || sse <= 1e-12) return id;

    const std::size_t width = x[rows[begin]].size();
    std::vector<std::size_t> features(width);
    std::iota(features.begin(), features.end(), 0);
    std::shuffle(features.begin(), features.end(), rng);
    features.resize(std::max<std::size_t>(1, std::size_t(std::ceil(o.feature_fraction * double(width)))));

    int best_feature = -1;
    double best_sse = sse, best_threshold = 0;
    std::vector<std::size_t> sorted(rows.begin() + std::ptrdiff_t(begin), rows.begin() + std::ptrdiff_t(end));
    for (std::size_t f : features) {
        std::ranges::sort(sorted, {}, [&](std::size_t r) { return x[r][f]; });
        double ls = 0, ls2 = 0;
        for (std::size_t k = 0; k + 1 < n; ++k) {
            const double v = y[sorted[k]];
            ls += v;
            ls2 += v * v;
            const std::size_t nl = k + 1, nr = n - nl;
            if (nl < std::size_t(o.min_leaf) || nr < std::size_t(o.min_leaf)) continue;
            const double a = x[sorted[k]][f], b = x[sorted[k + 1]][f];
            if (a == b) continue;
            const double rs = sum - ls, rs2 = sum2 - ls2;
            const double split_sse = (ls2 - ls * ls / double(nl)) + (rs2 - rs * rs / double(nr));
            if (split_sse < best_sse - 1e-12) {
                best_sse = split_sse;
                best_feature = int(f);
                best_threshold = (a + b) / 2;
            }
        }
    }
    if (best_feature < 0) return id;
    const auto mid = std::partition(rows.begin() + std::ptrdiff_t(begin), rows.begin() + std::ptrdiff_t(end),
                                    [&](std::size_t r) { return x[r][std::size_t(best_feature)] < best_threshold; });
    const std::size_t split = std::size_t(mid - rows.begin());
    tree[id].feature = best_feature;
    tree[id].threshold = best_threshold;
    const int left = grow(tree, rows, begin, split, depth + 1, x, y, rng, o);
    const int right = grow(tree, rows, split, end, depth + 1, x, y, rng, o);
    tree[id].left = left;
    tree[id].right = right;
    return id;
}

std::pair<double, double> RandomForest::predict(const std::vector<double>& x) const {
    if (m_trees.empty()) return {0, 0};
    double sum = 0, sum2 = 0;
    for (const Tree& tree : m_trees) {
        int id = 0;
        while (tree[std::size_t(id)].feature >= 0) {
            const Node& node = tree[std::size_t(id)];
            id = x[std::size_t(node.feature)] < node.threshold ? node.left : node.right;
        }
        const double v = tree[std::size_t(id)].value;
        sum += v;
        sum2 += v * v;
    }
    const double n = double(m_trees.size());
    const double mean = sum / n;
    return {mean, std::sqrt(std::max(0.0, sum2 / n - mean * mean))};
}

}  // namespace ktune
