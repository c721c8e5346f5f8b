#pragma once
// Included relative to scale.cuh's own folder (not from the kernel root).
#define KTUNE_TEST_SHIFT 0
