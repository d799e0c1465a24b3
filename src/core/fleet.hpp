// The fleet guard's rules: how the list of servers in snowflake.fleet is split, and what the
// answers of its members mean for this server (which member is this server itself, which node
// pairs are held twice, whose clock is too far off). Pure C++17: the glue connects and asks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace snowflake {

// Members a fleet list may name; a longer list is refused when the setting is made.
inline constexpr int kMaxFleetMembers = 64;

// One member's connection string inside the list: [begin, begin + length).
struct FleetSpan {
    size_t begin;
    size_t length;
};

struct FleetSplit {
    bool too_many;  // more than kMaxFleetMembers members; spans holds the first ones
    int count;
};

// Splits a list of libpq connection strings separated by semicolons; spaces around each string
// and empty entries (a trailing semicolon) are left out.
FleetSplit split_fleet_list(const char *list, FleetSpan spans[kMaxFleetMembers]) noexcept;

// What one member said, or that it said nothing.
struct MemberAnswer {
    bool answered;
    bool in_recovery;         // a standby, which generates no ids
    bool library_loaded;      // its snowflake.* settings exist
    int32_t datacenter_id;    // -1 when not set
    int32_t machine_id;       // -1 when not set
    bool has_instance_token;  // a version of the library that has one
    uint64_t instance_token;
    int64_t clock_offset_ms;  // its clock minus this server's
};

// What is wrong with a member, as bits: a member may have several problems at once.
enum MemberProblem : uint32_t {
    kUnreachable = 1u << 0,           // no answer: reported, never a reason to stop generating
    kLibraryNotLoaded = 1u << 1,      // snowflake is not in its shared_preload_libraries
    kNodeIdsNotSet = 1u << 2,         // one of its node ids is -1
    kSameNodeAsThisServer = 1u << 3,  // a live server other than this one holds this server's pair
    kSameNodeAsMember = 1u << 4,      // two other members hold the same pair
    kClockOffset = 1u << 5,           // its clock is further off than the limit
};

struct MemberAssessment {
    bool self;              // the member is this server (same instance token)
    uint32_t problem_bits;  // MemberProblem bits; 0 for this server itself
    int same_node_as;       // with kSameNodeAsMember: the index of the first other such member
};

// This server, as the members are compared with it.
struct ThisServer {
    uint64_t instance_token;
    int32_t datacenter_id;  // -1 when not set
    int32_t machine_id;
};

// Assesses every member at once, since a pair is duplicated only relative to the others. A
// member without an instance token is never this server: this server has one.
void assess_fleet(const MemberAnswer *answers, int count, ThisServer self, int64_t max_offset_ms,
                  MemberAssessment *assessments) noexcept;

// Whether this server must stop generating: some member other than itself holds its pair.
bool fleet_holds_this_node(const MemberAssessment *assessments, int count) noexcept;

// Whether one member's answer alone shows another live server holding this server's pair: the
// same as kSameNodeAsThisServer in assess_fleet, which needs no other answer, so that the guard
// can fence as soon as that member has answered.
bool member_holds_this_node(const MemberAnswer &answer, ThisServer self) noexcept;

static_assert(std::is_trivially_destructible_v<MemberAnswer> &&
                  std::is_trivially_destructible_v<MemberAssessment> &&
                  std::is_trivially_destructible_v<FleetSplit>,
              "results cross the ereport boundary and must own nothing");

}  // namespace snowflake
