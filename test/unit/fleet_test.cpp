// Unit tests of the fleet guard's rules: splitting snowflake.fleet, recognising this server, and
// which pairs are held twice.
#include "core/fleet.hpp"

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

namespace snowflake {
namespace {

constexpr uint64_t kOwnToken = 0x1234567890abcdefULL;
constexpr ThisServer kThisServer{kOwnToken, 1, 1};
constexpr int64_t kMaxOffsetMs = 1000;

std::string member(const char *list, const FleetSpan &span) {
    return std::string(list + span.begin, span.length);
}

MemberAnswer answer(int32_t datacenter_id, int32_t machine_id, uint64_t token = 42) {
    return {true, false, true, datacenter_id, machine_id, true, token, 0};
}

TEST(FleetListTest, SplitsOnSemicolonsAndTrims) {
    FleetSpan spans[kMaxFleetMembers];
    const char *list = " host=a port=1 ;host=b port=2;; \t host=c ; ";
    const FleetSplit split = split_fleet_list(list, spans);
    EXPECT_FALSE(split.too_many);
    ASSERT_EQ(split.count, 3);
    EXPECT_EQ(member(list, spans[0]), "host=a port=1");
    EXPECT_EQ(member(list, spans[1]), "host=b port=2");
    EXPECT_EQ(member(list, spans[2]), "host=c");
    EXPECT_EQ(split_fleet_list("", spans).count, 0);
    EXPECT_EQ(split_fleet_list(" ; ;", spans).count, 0);
}

TEST(FleetListTest, RefusesMoreThanTheLimit) {
    std::string list;
    for (int i = 0; i <= kMaxFleetMembers; ++i) {
        list += "port=" + std::to_string(i) + ";";
    }
    FleetSpan spans[kMaxFleetMembers];
    const FleetSplit split = split_fleet_list(list.c_str(), spans);
    EXPECT_TRUE(split.too_many);
    EXPECT_EQ(split.count, kMaxFleetMembers);
}

// Three healthy servers: this one is recognised by its token and has no problem; nobody else
// has one either.
TEST(FleetAssessTest, HealthyFleetWithThisServerInIt) {
    const MemberAnswer answers[] = {answer(1, 1, kOwnToken), answer(1, 2), answer(1, 3, 43)};
    MemberAssessment assessments[3];
    assess_fleet(answers, 3, kThisServer, kMaxOffsetMs, assessments);
    EXPECT_TRUE(assessments[0].self);
    for (const MemberAssessment &assessment : assessments) {
        EXPECT_EQ(assessment.problem_bits, 0u);
    }
    EXPECT_FALSE(fleet_holds_this_node(assessments, 3));
}

// A clone started from a backup of this server has this server's pair but not its token: a
// live duplicate, which fences this server; third members see two members with one pair.
TEST(FleetAssessTest, ACloneIsADuplicateOfThisServer) {
    const MemberAnswer answers[] = {answer(1, 1, kOwnToken), answer(1, 1, 99), answer(1, 2)};
    MemberAssessment assessments[3];
    assess_fleet(answers, 3, kThisServer, kMaxOffsetMs, assessments);
    EXPECT_TRUE(assessments[0].self);
    EXPECT_EQ(assessments[1].problem_bits, uint32_t{kSameNodeAsThisServer});
    EXPECT_EQ(assessments[2].problem_bits, 0u);
    EXPECT_TRUE(fleet_holds_this_node(assessments, 3));

    // Seen from the third server, whose own pair is (1, 2): two other members share (1, 1).
    const ThisServer third{42, 1, 2};
    assess_fleet(answers, 3, third, kMaxOffsetMs, assessments);
    EXPECT_TRUE(assessments[2].self);
    EXPECT_EQ(assessments[0].problem_bits, uint32_t{kSameNodeAsMember});
    EXPECT_EQ(assessments[0].same_node_as, 1);
    EXPECT_EQ(assessments[1].problem_bits, uint32_t{kSameNodeAsMember});
    EXPECT_EQ(assessments[1].same_node_as, 0);
    EXPECT_FALSE(fleet_holds_this_node(assessments, 3));
}

// Only a proven duplicate fences: no answer, a missing library, unset ids and a skewed clock are
// problems but not a reason to stop; a member without a token is never taken for this server.
TEST(FleetAssessTest, ProblemsThatDoNotFence) {
    MemberAnswer unreachable{};
    MemberAnswer not_loaded = answer(-1, -1);
    not_loaded.library_loaded = false;
    MemberAnswer skewed = answer(2, 2);
    skewed.clock_offset_ms = -kMaxOffsetMs - 1;
    MemberAnswer old_library = answer(1, 1, kOwnToken);
    old_library.has_instance_token = false;
    const MemberAnswer answers[] = {unreachable, not_loaded, answer(3, -1), skewed, old_library};
    MemberAssessment assessments[5];
    assess_fleet(answers, 5, kThisServer, kMaxOffsetMs, assessments);
    EXPECT_EQ(assessments[0].problem_bits, uint32_t{kUnreachable});
    EXPECT_EQ(assessments[1].problem_bits, uint32_t{kLibraryNotLoaded});
    EXPECT_EQ(assessments[2].problem_bits, uint32_t{kNodeIdsNotSet});
    EXPECT_EQ(assessments[3].problem_bits, uint32_t{kClockOffset});
    EXPECT_FALSE(assessments[4].self);
    EXPECT_EQ(assessments[4].problem_bits, uint32_t{kSameNodeAsThisServer});
    EXPECT_FALSE(fleet_holds_this_node(assessments, 4));
    EXPECT_TRUE(fleet_holds_this_node(assessments, 5));
}

// A standby listed in the fleet carries its primary's pair but generates nothing: no duplicate.
TEST(FleetAssessTest, AStandbyHoldsNoPair) {
    MemberAnswer standby = answer(1, 1, 77);
    standby.in_recovery = true;
    const MemberAnswer answers[] = {answer(1, 1, kOwnToken), standby};
    MemberAssessment assessments[2];
    assess_fleet(answers, 2, kThisServer, kMaxOffsetMs, assessments);
    EXPECT_EQ(assessments[1].problem_bits, 0u);
    EXPECT_FALSE(fleet_holds_this_node(assessments, 2));
}

// One server listed twice, by name and by address, answers twice with one token: not a duplicate.
TEST(FleetAssessTest, OneServerListedTwiceIsNotADuplicate) {
    const MemberAnswer answers[] = {answer(1, 1, kOwnToken), answer(1, 2, 50), answer(1, 2, 50)};
    MemberAssessment assessments[3];
    assess_fleet(answers, 3, kThisServer, kMaxOffsetMs, assessments);
    EXPECT_EQ(assessments[1].problem_bits, 0u);
    EXPECT_EQ(assessments[2].problem_bits, 0u);
}

// A server whose own ids are not set holds no pair, so nobody duplicates it.
TEST(FleetAssessTest, UnsetOwnIdsAreNeverDuplicated) {
    const MemberAnswer answers[] = {answer(-1, -1, kOwnToken), answer(1, 1)};
    MemberAssessment assessments[2];
    assess_fleet(answers, 2, ThisServer{kOwnToken, -1, -1}, kMaxOffsetMs, assessments);
    EXPECT_FALSE(fleet_holds_this_node(assessments, 2));
    EXPECT_EQ(assessments[1].problem_bits, 0u);
}

// One answer alone says whether that member holds this server's pair, as the whole assessment
// does: the guard fences on it before the other members have answered.
TEST(FleetAssessTest, OneAnswerShowsADuplicateBeforeTheOthers) {
    MemberAnswer standby = answer(1, 1, 77);
    standby.in_recovery = true;
    MemberAnswer old_library = answer(1, 1, kOwnToken);
    old_library.has_instance_token = false;
    const MemberAnswer answers[] = {
        MemberAnswer{}, answer(1, 1, kOwnToken), answer(1, 1, 99), answer(1, 2), standby,
        old_library,    answer(-1, -1)};
    constexpr int kCount = sizeof(answers) / sizeof(answers[0]);
    MemberAssessment assessments[kCount];
    assess_fleet(answers, kCount, kThisServer, kMaxOffsetMs, assessments);
    const bool expected[kCount] = {false, false, true, false, false, true, false};
    for (int i = 0; i < kCount; i++) {
        EXPECT_EQ(member_holds_this_node(answers[i], kThisServer), expected[i]) << "member " << i;
        EXPECT_EQ((assessments[i].problem_bits & kSameNodeAsThisServer) != 0, expected[i])
            << "member " << i;
    }
}

}  // namespace
}  // namespace snowflake
