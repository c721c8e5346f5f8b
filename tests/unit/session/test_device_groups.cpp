// GPUs pooled only when they are the same device: one key and a calibration that agrees within noise.
#include <gtest/gtest.h>

#include "core/device.hpp"
#include "tuner/session/devices.hpp"

namespace ktune {
namespace {

DeviceInfo gpu(const std::string& key, double launch_floor_us, const std::string& bus, double copy_gbps = 3000) {
    DeviceInfo d;
    d.key = key;
    d.copy_gbps = copy_gbps;
    d.launch_floor_us = launch_floor_us;
    d.pci_bus_id = bus;
    d.host = "node1";
    return d;
}

TEST(Calibration, MeasurementsWithinNoiseAgree) {
    EXPECT_EQ(calibration_difference(gpu("k", 3.23, "a"), gpu("k", 3.30, "b")), "");
    EXPECT_EQ(calibration_difference(gpu("k", 3.23, "a", 3000), gpu("k", 3.23, "b", 3060)), "");
    // Two H100s of one host (2026-11-27): the CUPTI floor's own noise.
    DeviceInfo a = gpu("k", 3.23, "a"), b = gpu("k", 3.23, "b");
    a.launch_floor_cupti_us = 0.86;
    b.launch_floor_cupti_us = 1.02;
    EXPECT_EQ(calibration_difference(a, b), "");
    // Never measured on one side: nothing to compare.
    EXPECT_EQ(calibration_difference(gpu("k", 0, "a", 0), gpu("k", 5.0, "b")), "");
}

TEST(Calibration, TwoHostKindsWithOneKeyDifferByTheirLaunchFloor) {
    const std::string d = calibration_difference(gpu("k", 3.23, "a"), gpu("k", 4.93, "b"));
    EXPECT_NE(d.find("launch floor (events) 3.23 against 4.93 us"), std::string::npos) << d;
    EXPECT_NE(calibration_difference(gpu("k", 3.2, "a", 3000), gpu("k", 3.2, "b", 2500)).find("copy ceiling"),
              std::string::npos);
    DeviceInfo a = gpu("k", 3.2, "a"), b = gpu("k", 3.2, "b");
    a.launch_floor_cupti_us = 1.9;
    b.launch_floor_cupti_us = 3.1;
    EXPECT_NE(calibration_difference(a, b).find("CUPTI"), std::string::npos);
}

TEST(DeviceGroups, IdenticalGpusShareOneDevice) {
    std::vector<DeviceInfo> gpus = {gpu("h100", 3.2, "0"), gpu("h100", 3.25, "1"), gpu("h100", 3.21, "2")};
    std::vector<std::string> notices;
    const auto groups = group_equivalent_gpus(gpus, notices);
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups.front(), (std::vector<std::size_t>{0, 1, 2}));
    EXPECT_TRUE(notices.empty());
}

TEST(DeviceGroups, GpusWithAnotherKeyAreSeparateDevices) {
    std::vector<DeviceInfo> gpus = {gpu("h100", 3.2, "0"), gpu("a100", 4.0, "1"), gpu("h100", 3.2, "2")};
    std::vector<std::string> notices;
    const auto groups = group_equivalent_gpus(gpus, notices);
    ASSERT_EQ(groups.size(), 2u);
    EXPECT_EQ(groups[0], (std::vector<std::size_t>{0, 2}));
    EXPECT_EQ(groups[1], (std::vector<std::size_t>{1}));
    EXPECT_TRUE(notices.empty());
}

TEST(DeviceGroups, AGpuWithTheKeyButNotTheCalibrationIsADeviceOfItsOwnWithANotice) {
    std::vector<DeviceInfo> gpus = {gpu("h100", 3.2, "0000:18:00.0"), gpu("h100", 5.0, "0000:2a:00.0")};
    std::vector<std::string> notices;
    const auto groups = group_equivalent_gpus(gpus, notices);
    ASSERT_EQ(groups.size(), 2u);
    EXPECT_EQ(gpus[0].key, "h100");
    EXPECT_EQ(gpus[1].key, "h100|host node1|gpu 0000:2a:00.0");
    ASSERT_EQ(notices.size(), 1u);
    EXPECT_NE(notices.front().find("launch floor"), std::string::npos);
}

}  // namespace
}  // namespace ktune
