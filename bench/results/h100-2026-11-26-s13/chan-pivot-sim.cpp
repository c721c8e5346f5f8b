#include <cstdio>
#include <random>
#include <vector>
#include <cmath>
// fp32 simulation of the clustered LayerNorm variance (sequential sums per block), with and without the pivot
double var_chan(const std::vector<float>& x, int C, float pivot) {
    int H = x.size(); std::vector<float> S(C), M2(C); std::vector<int> N(C);
    for (int q = 0; q < C; ++q) {
        int b = q * H / C, e = (q + 1) * H / C; float s = 0;
        for (int i = b; i < e; ++i) s += x[i] - pivot;
        int n = e - b; float mb = s / n, m2 = 0;
        for (int i = b; i < e; ++i) { float d = (x[i] - pivot) - mb; m2 = fmaf(d, d, m2); }
        S[q] = s; M2[q] = m2; N[q] = n;
    }
    float tot = 0; for (float s : S) tot += s;
    float mean = tot * (1.0f / H), m2 = 0;
    for (int q = 0; q < C; ++q) { float d = S[q] - N[q] * mean; m2 += M2[q] + d * d / N[q]; }
    return double(m2) / H;
}
int main() {
    std::mt19937 g(1); std::normal_distribution<double> nd;
    for (double ratio : {1.0, 1e3, 1e4}) {
        double e0 = 0, e1 = 0;
        for (int r = 0; r < 10; ++r) {
            std::vector<float> x(8192); for (auto& v : x) v = float(ratio + nd(g));
            double m = 0; for (float v : x) m += v; m /= x.size();
            double ref = 0; for (float v : x) ref += (v - m) * (v - m); ref /= x.size();
            e0 = std::max(e0, std::fabs(var_chan(x, 4, 0.0f) - ref) / ref);
            e1 = std::max(e1, std::fabs(var_chan(x, 4, x[0]) - ref) / ref);
        }
        printf("|mean|/std %g: no pivot %.2e, pivot %.2e\n", ratio, e0, e1);
    }
}
