// The window of stored keys that raise the generator, and the millisecond it is raised through.

#include "core/key_floor.hpp"

#include <gtest/gtest.h>

#include "core/codec.hpp"
#include "core/layout.hpp"

namespace snowflake {
namespace {

constexpr int64_t kNow = 1700000000000;

Node node(int32_t datacenter_id, int32_t machine_id) {
    return make_node(datacenter_id, machine_id).node;
}

int64_t id_at(int64_t unix_ms, int32_t datacenter_id, int32_t machine_id, int32_t sequence) {
    return encode({unix_ms, datacenter_id, machine_id, sequence}).id;
}

// A window opened by a read at kNow with the default lead.
KeyWindow window_at(int64_t now_unix_ms) {
    return key_window(now_unix_ms, key_window_end(kNow, 60000), node(7, 13));
}

TEST(KeyWindow, RunsFromTheClocksMillisecondToTheLeadAhead) {
    const KeyWindow window = window_at(kNow);
    EXPECT_EQ(window.lowest_id, id_at(kNow, 0, 0, 0));
    EXPECT_EQ(window.highest_id, id_at(kNow + 60000, 31, 31, kMaxSequence));
    EXPECT_EQ(window.last_unix_ms, kNow + 60000);
    EXPECT_EQ(window.node_fields, id_at(kNow, 7, 13, 0) - id_at(kNow, 0, 0, 0));
}

TEST(KeyWindow, NodeFieldsMaskCoversExactlyThePair) {
    EXPECT_EQ(id_at(kNow, 31, 31, 0) - id_at(kNow, 0, 0, 0), kNodeFieldsMask);
    EXPECT_EQ(id_at(kNow, 7, 13, kMaxSequence) & kNodeFieldsMask, node(7, 13).bits);
}

TEST(KeyWindow, IsClampedAtTheEndOfTheLayoutAndNeverNegativeInLength) {
    EXPECT_EQ(
        key_window(kMaxUnixMs - 10, key_window_end(kMaxUnixMs - 10, 60000), node(0, 0)).highest_id,
        kMaxId);
    const KeyWindow no_lead = key_window(kNow, key_window_end(kNow, -5), node(0, 0));
    EXPECT_EQ(no_lead.highest_id, id_at(kNow, 31, 31, kMaxSequence));
}

TEST(KeyWindow, EndsWhereTheFirstReadPutItWhateverLaterReadsSay) {
    const KeyWindow later = window_at(kNow + 40000);
    EXPECT_EQ(later.lowest_id, id_at(kNow + 40000, 0, 0, 0));
    EXPECT_EQ(later.last_unix_ms, kNow + 60000);
}

TEST(KeyWindow, IsEmptyOnceItsEndHasPassed) {
    const KeyWindow passed = window_at(kNow + 90000);
    EXPECT_EQ(passed.highest_id, passed.lowest_id - 1);
    EXPECT_EQ(passed.last_unix_ms, kNow + 89999);
    EXPECT_EQ(key_floor_through_ms(passed, kNow + 90000, id_at(kNow + 90000, 7, 13, 0)),
              kNow + 89999);
}

TEST(KeyFloor, WithoutAKeyInTheWindowIsTheMillisecondBeforeTheClock) {
    const KeyWindow window = window_at(kNow);
    EXPECT_EQ(key_floor_through_ms(window, kNow, -1), kNow - 1);
    EXPECT_EQ(key_floor_through_ms(window, kNow, id_at(kNow - 1, 7, 13, 5)), kNow - 1);
    EXPECT_EQ(key_floor_through_ms(window, kNow, id_at(kNow + 60001, 7, 13, 0)), kNow - 1);
}

TEST(KeyFloor, WithAKeyInTheWindowIsThatKeysMillisecond) {
    const KeyWindow window = window_at(kNow);
    EXPECT_EQ(key_floor_through_ms(window, kNow, id_at(kNow, 7, 13, 0)), kNow);
    EXPECT_EQ(key_floor_through_ms(window, kNow, id_at(kNow + 25000, 7, 13, 4095)), kNow + 25000);
    EXPECT_EQ(key_floor_through_ms(window, kNow, window.highest_id), kNow + 60000);
}

TEST(StoredKeys, InTheWindowAndBeyondItAreKeptApartAndOthersIgnored) {
    const KeyWindow window = window_at(kNow);
    FoundKeys found;
    note_stored_key(window, id_at(kNow - 1, 7, 13, 4095), &found);
    note_stored_key(window, id_at(kNow + 5000, 7, 12, 0), &found);
    note_stored_key(window, id_at(kNow + 90000, 8, 13, 0), &found);
    EXPECT_EQ(found.in_window, -1);
    EXPECT_EQ(found.beyond_window, -1);
    EXPECT_EQ(found.beyond_window_keys, 0u);
    note_stored_key(window, id_at(kNow + 5000, 7, 13, 1), &found);
    note_stored_key(window, id_at(kNow, 7, 13, 0), &found);
    note_stored_key(window, id_at(kNow + 60001, 7, 13, 0), &found);
    note_stored_key(window, id_at(kNow + 86400000, 7, 13, 9), &found);
    note_stored_key(window, id_at(kNow + 70000, 7, 13, 0), &found);
    EXPECT_EQ(found.in_window, id_at(kNow + 5000, 7, 13, 1));
    EXPECT_EQ(found.beyond_window, id_at(kNow + 86400000, 7, 13, 9));
    // The refusal says how many keys lie beyond the bound: those of the pair alone.
    EXPECT_EQ(found.beyond_window_keys, 3u);
}

TEST(StoredKeys, OnlyKeysOfThePairFromTheClocksMillisecondOnMayHoldGeneration) {
    const KeyWindow window = window_at(kNow);
    EXPECT_FALSE(may_hold_generation(window, id_at(kNow - 1, 7, 13, kMaxSequence)));
    EXPECT_FALSE(may_hold_generation(window, id_at(kNow + 5000, 7, 14, 0)));
    EXPECT_TRUE(may_hold_generation(window, id_at(kNow, 7, 13, 0)));
    EXPECT_TRUE(may_hold_generation(window, id_at(kNow + 86400000, 7, 13, 0)));
}

TEST(StoredKeys, TheWindowsLastIdIsInItAndTheNextBeyondIt) {
    const KeyWindow window = window_at(kNow);
    FoundKeys found;
    note_stored_key(window, id_at(kNow + 60000, 7, 13, kMaxSequence), &found);
    EXPECT_EQ(found.in_window, id_at(kNow + 60000, 7, 13, kMaxSequence));
    EXPECT_EQ(found.beyond_window, -1);
    note_stored_key(window, id_at(kNow + 60001, 7, 13, 0), &found);
    EXPECT_EQ(found.beyond_window, id_at(kNow + 60001, 7, 13, 0));
}

TEST(BeyondKey, StopsGenerationUntilTheClockLeavesItsMillisecond) {
    const int64_t key = id_at(kNow + 120000, 7, 13, 3);
    EXPECT_EQ(unix_ms_of_key(key), kNow + 120000);
    EXPECT_TRUE(beyond_key_stops_generation(key, kNow));
    EXPECT_TRUE(beyond_key_stops_generation(key, kNow + 120000));
    EXPECT_FALSE(beyond_key_stops_generation(key, kNow + 120001));
    EXPECT_FALSE(beyond_key_stops_generation(-1, kNow));
}

}  // namespace
}  // namespace snowflake
