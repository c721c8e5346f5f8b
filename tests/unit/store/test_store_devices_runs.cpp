#include "tests/unit/store/store_test_util.hpp"

namespace ktune::test {
namespace {

DeviceInfo h100() {
    DeviceInfo d;
    d.name = "NVIDIA H100 80GB HBM3";
    d.cc_major = 9;
    d.cc_minor = 0;
    d.sm_count = 132;
    d.l2_bytes = 50LL * 1024 * 1024;
    d.memory_bytes = 85'520'809'984;  // what the driver reports: 79.6 GiB
    d.memory_clock_khz = 2'619'000;
    d.memory_bus_bits = 5120;
    d.sm_clock_khz = 1'980'000;
    d.driver_version = "13.0";
    d.cuda_version = "13.0";
    d.nvrtc_version = "13.0";
    d.uuid = "GPU-1234";
    d.pci_bus_id = "0000:18:00.0";
    d.key = make_device_key(d);
    return d;
}

TEST(DeviceKey, IsReadableAndHoldsEveryIdentifyingField) {
    EXPECT_EQ(make_device_key(h100()),
              "NVIDIA H100 80GB HBM3|sm_90|132SM|L2 50MiB|HBM 79GiB@2619MHz|drv 13.0|cuda 13.0|nvrtc 13.0");
}

TEST(DeviceKey, ChangesWithTheDriverVersion) {
    DeviceInfo d = h100();
    const std::string before = make_device_key(d);
    d.driver_version = "13.1";
    EXPECT_NE(make_device_key(d), before);
}

TEST(DeviceKey, DoesNotDependOnTheUuidOrBusId) {
    DeviceInfo d = h100();
    const std::string before = make_device_key(d);
    d.uuid = "GPU-other";
    d.pci_bus_id = "0000:19:00.0";
    EXPECT_EQ(make_device_key(d), before);
}

TEST(DeviceInfoArch, IsSmFollowedByTheComputeCapabilityDigits) {
    DeviceInfo d;
    d.cc_major = 10;
    d.cc_minor = 0;
    EXPECT_EQ(d.arch(), "sm_100");
    d.cc_major = 8;
    d.cc_minor = 6;
    EXPECT_EQ(d.arch(), "sm_86");
}

TEST(DeviceInfoChipKey, IsNameArchAndSmCount) { EXPECT_EQ(h100().chip_key(), "NVIDIA H100 80GB HBM3|sm_90|132SM"); }

using StoreDevices = StoreTest;

TEST_F(StoreDevices, AnUpsertedDeviceReadsBackWithEveryField) {
    Store store = Store::open(db_path());
    DeviceInfo d = h100();
    d.copy_gbps = 3050.5;
    d.launch_floor_us = 2.25;
    d.measured_at = "2025-01-01T00:00:00Z";
    store.upsert_device(d);

    const auto out = store.device(d.key);
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(out->key, d.key);
    EXPECT_EQ(out->name, d.name);
    EXPECT_EQ(out->cc_major, 9);
    EXPECT_EQ(out->cc_minor, 0);
    EXPECT_EQ(out->sm_count, 132);
    EXPECT_EQ(out->l2_bytes, d.l2_bytes);
    EXPECT_EQ(out->memory_bytes, d.memory_bytes);
    EXPECT_EQ(out->memory_clock_khz, d.memory_clock_khz);
    EXPECT_EQ(out->memory_bus_bits, d.memory_bus_bits);
    EXPECT_EQ(out->sm_clock_khz, d.sm_clock_khz);
    EXPECT_EQ(out->driver_version, d.driver_version);
    EXPECT_EQ(out->cuda_version, d.cuda_version);
    EXPECT_EQ(out->nvrtc_version, d.nvrtc_version);
    EXPECT_EQ(out->uuid, d.uuid);
    EXPECT_EQ(out->pci_bus_id, d.pci_bus_id);
    EXPECT_EQ(out->copy_gbps, 3050.5);
    EXPECT_EQ(out->launch_floor_us, 2.25);
    EXPECT_EQ(out->measured_at, d.measured_at);
}

TEST_F(StoreDevices, UpsertWithZeroCeilingsKeepsTheMeasuredOnes) {
    Store store = Store::open(db_path());
    DeviceInfo d = h100();
    d.copy_gbps = 3050.5;
    d.launch_floor_us = 2.25;
    d.measured_at = "2025-01-01T00:00:00Z";
    store.upsert_device(d);

    DeviceInfo again = h100();
    again.sm_clock_khz = 1'755'000;  // descriptive fields follow the newest report
    store.upsert_device(again);

    const auto out = store.device(d.key);
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(out->copy_gbps, 3050.5);
    EXPECT_EQ(out->launch_floor_us, 2.25);
    EXPECT_EQ(out->measured_at, "2025-01-01T00:00:00Z");
    EXPECT_EQ(out->sm_clock_khz, 1'755'000);
}

TEST_F(StoreDevices, UpsertWithNewCeilingsReplacesThem) {
    Store store = Store::open(db_path());
    DeviceInfo d = h100();
    d.copy_gbps = 3050.5;
    d.launch_floor_us = 2.25;
    store.upsert_device(d);
    d.copy_gbps = 3100;
    d.launch_floor_us = 0;
    d.measured_at = "2025-02-01T00:00:00Z";
    store.upsert_device(d);

    const auto out = store.device(d.key);
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(out->copy_gbps, 3100);
    EXPECT_EQ(out->launch_floor_us, 2.25);
    EXPECT_EQ(out->measured_at, "2025-02-01T00:00:00Z");
}

TEST_F(StoreDevices, AnUnknownKeyHasNoDevice) {
    Store store = Store::open(db_path());
    EXPECT_FALSE(store.device("nope").has_value());
}

TEST_F(StoreDevices, DevicesListsEachKeyOnce) {
    Store store = Store::open(db_path());
    DeviceInfo a = h100();
    DeviceInfo b = h100();
    b.driver_version = "13.1";
    b.key = make_device_key(b);
    store.upsert_device(a);
    store.upsert_device(b);
    store.upsert_device(a);
    EXPECT_EQ(store.devices().size(), 2u);
}

TEST_F(StoreDevices, ARecordOnANeverUpsertedDeviceLeavesARowThatAnUpsertFillsIn) {
    Store store = Store::open(db_path());
    const DeviceInfo d = h100();
    store.record(make_record("B=1", problem({{"M", 16}}), 1.0, Status::ok, d.key));
    ASSERT_TRUE(store.device(d.key).has_value());
    EXPECT_EQ(store.device(d.key)->name, "");
    store.upsert_device(d);
    EXPECT_EQ(store.device(d.key)->name, d.name);
}

using StoreRuns = StoreTest;

TEST_F(StoreRuns, ABegunRunReadsBackAsRunning) {
    Store store = Store::open(db_path());
    RunInfo r;
    r.started_at = "2025-01-01T00:00:00Z";
    r.git_revision = "abc123";
    r.command_line = "ktune tune rmsnorm";
    r.environment_json = R"({"host":"node1"})";
    r.device_key = "dev-A";
    const std::int64_t id = store.begin_run(r);

    const auto out = store.run(id);
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(out->id, id);
    EXPECT_EQ(out->started_at, r.started_at);
    EXPECT_EQ(out->finished_at, "");
    EXPECT_EQ(out->git_revision, r.git_revision);
    EXPECT_EQ(out->command_line, r.command_line);
    EXPECT_EQ(out->environment_json, r.environment_json);
    EXPECT_EQ(out->device_key, r.device_key);
    EXPECT_EQ(out->status, "running");
}

TEST_F(StoreRuns, FinishingARunSetsItsStatusAndFinishTime) {
    Store store = Store::open(db_path());
    const std::int64_t id = store.begin_run(RunInfo{});
    store.finish_run(id, "interrupted");

    const auto out = store.run(id);
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(out->status, "interrupted");
    EXPECT_FALSE(out->finished_at.empty());
    EXPECT_FALSE(out->started_at.empty());
}

TEST_F(StoreRuns, EachRunGetsANewId) {
    Store store = Store::open(db_path());
    EXPECT_NE(store.begin_run(RunInfo{}), store.begin_run(RunInfo{}));
}

TEST_F(StoreRuns, FinishingAnUnknownRunIsAStoreError) {
    Store store = Store::open(db_path());
    const Error e = error_of([&] { store.finish_run(7, "finished"); });
    EXPECT_EQ(e.category(), ErrorCategory::store);
    EXPECT_NE(e.message().find("run 7"), std::string::npos) << e.message();
}

TEST_F(StoreRuns, AnUnknownRunIdHasNoRun) {
    Store store = Store::open(db_path());
    EXPECT_FALSE(store.run(99).has_value());
}

}  // namespace
}  // namespace ktune::test
