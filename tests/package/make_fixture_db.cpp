// Writes a small results database for the package and Python tests: the export tests' golden store (rmsnorm/fwd
// tuned on two H100 models), so that reading the best configurations and exporting a header need no GPU.
//   ktune_package_fixture DB
#include <cstdio>

#include "tests/unit/export/export_test_util.hpp"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s DB\n", argv[0]);
        return 2;
    }
    ktune::Store store = ktune::Store::open(argv[1]);
    ktune::test::fill_golden_store(store);
    return 0;
}
