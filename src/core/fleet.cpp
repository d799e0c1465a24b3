#include "core/fleet.hpp"

namespace snowflake {

namespace {

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// A standby carries its primary's pair but generates nothing, so it holds no pair.
bool holds_pair(const MemberAnswer &answer) {
    return answer.answered && !answer.in_recovery && answer.library_loaded &&
           answer.datacenter_id >= 0 && answer.machine_id >= 0;
}

bool same_pair(const MemberAnswer &a, const MemberAnswer &b) {
    return a.datacenter_id == b.datacenter_id && a.machine_id == b.machine_id;
}

}  // namespace

FleetSplit split_fleet_list(const char *list, FleetSpan spans[kMaxFleetMembers]) noexcept {
    FleetSplit split{false, 0};
    size_t position = 0;
    for (;;) {
        size_t end = position;
        while (list[end] != '\0' && list[end] != ';') {
            ++end;
        }
        size_t begin = position;
        size_t last = end;
        while (begin < last && is_space(list[begin])) {
            ++begin;
        }
        while (last > begin && is_space(list[last - 1])) {
            --last;
        }
        if (last > begin) {
            if (split.count == kMaxFleetMembers) {
                split.too_many = true;
                return split;
            }
            spans[split.count++] = {begin, last - begin};
        }
        if (list[end] == '\0') {
            return split;
        }
        position = end + 1;
    }
}

void assess_fleet(const MemberAnswer *answers, int count, ThisServer self, int64_t max_offset_ms,
                  MemberAssessment *assessments) noexcept {
    for (int i = 0; i < count; ++i) {
        const MemberAnswer &answer = answers[i];
        MemberAssessment &assessment = assessments[i];
        assessment = {false, 0, -1};
        if (!answer.answered) {
            assessment.problem_bits = kUnreachable;
            continue;
        }
        if (answer.has_instance_token && answer.instance_token == self.instance_token) {
            assessment.self = true;
            continue;
        }
        if (!answer.library_loaded) {
            assessment.problem_bits |= kLibraryNotLoaded;
        } else if (answer.datacenter_id < 0 || answer.machine_id < 0) {
            assessment.problem_bits |= kNodeIdsNotSet;
        }
        if (member_holds_this_node(answer, self)) {
            assessment.problem_bits |= kSameNodeAsThisServer;
        }
        for (int j = 0; j < count && assessment.same_node_as < 0; ++j) {
            const bool other_is_self =
                answers[j].has_instance_token && answers[j].instance_token == self.instance_token;
            // One server listed twice (by name and by address) is not two servers.
            const bool same_server = answer.has_instance_token && answers[j].has_instance_token &&
                                     answer.instance_token == answers[j].instance_token;
            if (j != i && !other_is_self && !same_server && holds_pair(answer) &&
                holds_pair(answers[j]) && same_pair(answer, answers[j])) {
                assessment.problem_bits |= kSameNodeAsMember;
                assessment.same_node_as = j;
            }
        }
        if (answer.clock_offset_ms > max_offset_ms || answer.clock_offset_ms < -max_offset_ms) {
            assessment.problem_bits |= kClockOffset;
        }
    }
}

bool fleet_holds_this_node(const MemberAssessment *assessments, int count) noexcept {
    for (int i = 0; i < count; ++i) {
        if ((assessments[i].problem_bits & kSameNodeAsThisServer) != 0) {
            return true;
        }
    }
    return false;
}

bool member_holds_this_node(const MemberAnswer &answer, ThisServer self) noexcept {
    const bool is_self = answer.has_instance_token && answer.instance_token == self.instance_token;
    return !is_self && holds_pair(answer) && answer.datacenter_id == self.datacenter_id &&
           answer.machine_id == self.machine_id;
}

}  // namespace snowflake
