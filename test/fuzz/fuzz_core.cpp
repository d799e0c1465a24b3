// libFuzzer target for the core: arbitrary ids, fields, mark files, and clock sequences driven
// through the generator, checking the invariants that uniqueness rests on.
#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/codec.hpp"
#include "core/fleet.hpp"
#include "core/generator.hpp"
#include "core/layout.hpp"
#include "core/key_floor.hpp"
#include "core/mark_file.hpp"
#include "core/mark_rules.hpp"

namespace {

using namespace snowflake;

// Consumes fixed-size values from the front of the input, zero once it runs out.
class Input {
  public:
    Input(const uint8_t *data, size_t size) : data_(data), size_(size) {}

    template <typename T>
    T take() {
        T value{};
        const size_t n = size_ < sizeof(T) ? size_ : sizeof(T);
        std::memcpy(&value, data_, n);
        data_ += n;
        size_ -= n;
        return value;
    }

    bool empty() const { return size_ == 0; }

  private:
    const uint8_t *data_;
    size_t size_;
};

void require(bool condition) {
    if (!condition) {
        std::abort();
    }
}

// decode and encode are inverse on every valid value, and reject exactly the invalid ones.
void check_codec(Input &input) {
    const int64_t id = input.take<int64_t>();
    const DecodeResult decoded = decode(id);
    require((decoded.status == CodecStatus::kOk) == (id >= 0));
    if (decoded.status == CodecStatus::kOk) {
        const EncodeResult again = encode(decoded.parts);
        require(again.status == CodecStatus::kOk && again.id == id);
    }
    const Parts parts{input.take<int64_t>(), input.take<int32_t>(), input.take<int32_t>(),
                      input.take<int32_t>()};
    const EncodeResult encoded = encode(parts);
    const bool valid = parts.unix_ms >= kEpochUnixMs && parts.unix_ms <= kMaxUnixMs &&
                       parts.datacenter_id >= 0 && parts.datacenter_id <= kMaxDatacenterId &&
                       parts.machine_id >= 0 && parts.machine_id <= kMaxMachineId &&
                       parts.sequence >= 0 && parts.sequence <= kMaxSequence;
    require((encoded.status == CodecStatus::kOk) == valid);
    if (valid) {
        const DecodeResult back = decode(encoded.id);
        require(back.status == CodecStatus::kOk && back.parts.unix_ms == parts.unix_ms &&
                back.parts.datacenter_id == parts.datacenter_id &&
                back.parts.machine_id == parts.machine_id && back.parts.sequence == parts.sequence);
        require(min_id_at_or_after(parts.unix_ms) <= encoded.id &&
                encoded.id <= max_id_at_or_before(parts.unix_ms));
    }
    // Consecutive milliseconds' bounds meet exactly, so [a, b) id ranges neither overlap nor miss.
    const int64_t ms = input.take<int64_t>();
    require(min_id_at_or_after(ms) >= 0 && max_id_at_or_before(ms) >= -1);
    if (ms > kEpochUnixMs && ms <= kMaxUnixMs) {
        require(max_id_at_or_before(ms - 1) + 1 == min_id_at_or_after(ms));
        require(min_id_at_or_after(ms) < max_id_at_or_before(ms));
    }
}

// The type's text form: an accepted value writes back as the same digits (leading zeros, spaces
// and a plus sign aside), and every id's own digits are accepted.
void check_id_text(Input &input) {
    char text[24];
    for (char &c : text) {
        c = input.take<char>();
    }
    text[sizeof(text) - 1] = '\0';
    const IdTextResult parsed = parse_id_text(text);
    if (parsed.status == IdTextStatus::kOk) {
        require(parsed.id >= 0);
        char digits[24];
        std::snprintf(digits, sizeof(digits), "%lld", static_cast<long long>(parsed.id));
        require(std::strstr(text, digits) != nullptr || parsed.id == 0);
    }
    const int64_t id = input.take<int64_t>();
    char written[24];
    std::snprintf(written, sizeof(written), "%lld", static_cast<long long>(id));
    const IdTextResult back = parse_id_text(written);
    require(id >= 0 ? back.status == IdTextStatus::kOk && back.id == id
                    : back.status == IdTextStatus::kNegative);
}

// Only what format_mark_file writes is accepted, and it reads back the same.
void check_mark_file(Input &input) {
    char bytes[kMarkFileMaxSize + 8];
    const size_t size = input.take<uint8_t>() % sizeof(bytes);
    for (size_t i = 0; i < size; i++) {
        bytes[i] = static_cast<char>(input.take<uint8_t>());
    }
    const MarkFileResult parsed = parse_mark_file(bytes, size);
    // A version 2 file reads back byte for byte; a version 1 file names no cluster.
    if (parsed.status == MarkFileStatus::kOk && parsed.system_identifier != 0) {
        const MarkFileText text =
            format_mark_file(parsed.mark_unix_ms, parsed.system_identifier, parsed.node_bits);
        require(text.size == size && std::memcmp(text.bytes, bytes, size) == 0);
    }
    const int64_t mark = input.take<int64_t>() & INT64_MAX;
    const uint64_t system_identifier = input.take<uint64_t>() | 1;
    // An odd byte stands for a file that names no pair.
    const int64_t node_bits =
        input.take<uint8_t>() % 2 == 1 ? -1 : input.take<int64_t>() & kNodeFieldsMask;
    const MarkFileText text = format_mark_file(mark, system_identifier, node_bits);
    const MarkFileResult round_trip = parse_mark_file(text.bytes, text.size);
    if (mark >= kEpochUnixMs && mark <= kMaxUnixMs) {
        require(round_trip.status == MarkFileStatus::kOk && round_trip.mark_unix_ms == mark &&
                round_trip.system_identifier == system_identifier &&
                round_trip.node_bits == node_bits);
    } else {
        require(round_trip.status == MarkFileStatus::kOutOfRange);
    }
}

// A planned mark is never below the highest known nor outside the layout; a bound is never
// negative, nor above what the mark covers.
void check_mark_rules(Input &input) {
    const int64_t known = input.take<int64_t>();
    const int64_t cover = input.take<int64_t>();
    const MarkPlan plan = plan_mark(known, cover);
    require((plan.move == MarkMove::kOutOfRange) == !clock_in_layout(cover));
    require(plan.move != MarkMove::kWrite ||
            (plan.mark_unix_ms > known && clock_in_layout(plan.mark_unix_ms)));
    const MarkPlan lease = plan_lease(known, cover);
    require(lease.move != MarkMove::kWrite ||
            (lease.mark_unix_ms > known && lease.mark_unix_ms >= cover &&
             lease.mark_unix_ms <= kMaxUnixMs));
    const uint64_t lowest = input.take<uint64_t>();
    const int64_t bound = covered_bound(lowest, cover);
    require(bound >= 0 && static_cast<uint64_t>(bound) <= lowest &&
            static_cast<uint64_t>(bound) <= word_through(cover));
}

// Drives one generator with a clock, node ids and a mark that the input moves around, and checks
// every outcome against the rules: ids strictly increase, each carries the clock reading and the
// node, none passes the mark, and a refusal writes nothing.
void check_generator(Input &input) {
    GeneratorState state;
    // Kept across operations, so that raise_floor leaves it stale as a real backend's can be.
    SeenWord seen;
    int64_t now = kEpochUnixMs + (input.take<uint32_t>() & 0xFFFFFF);
    int64_t limit = now + 10;
    int32_t datacenter = 1;
    int32_t machine = 1;
    int64_t last_id = -1;
    for (int step = 0; step < 2000 && !input.empty(); step++) {
        const uint8_t op = input.take<uint8_t>();
        switch (op % 8) {
            case 0:
                now += 1;
                break;
            case 1:
                now -= 1 + (op >> 3) % 4;
                break;
            case 2:
                now += (op >> 3) * 97;
                break;
            case 3:
                datacenter = (op >> 3) % 32;
                machine = input.take<uint8_t>() % 32;
                break;
            case 4:
                limit = now + (op >> 3) % 3 - 1;
                break;
            case 5:
                raise_floor(state, now + (op >> 3) % 4 - 2);
                last_id = static_cast<int64_t>(state.after_last_id.load()) - 1;
                break;
            default:
                break;
        }
        const Node node = make_node(datacenter, machine).node;
        const uint64_t before = state.after_last_id.load();
        const NextResult result =
            next_id(state, node, limit, seen, [now]() noexcept { return now; });
        require(result.now_unix_ms == now);
        if (result.status != NextStatus::kIssued) {
            require(state.after_last_id.load() == before);
        }
        switch (result.status) {
            case NextStatus::kIssued: {
                const DecodeResult parts = decode(result.id);
                require(parts.status == CodecStatus::kOk);
                require(result.id > last_id);
                require(parts.parts.unix_ms == now && now <= limit);
                require(parts.parts.datacenter_id == datacenter &&
                        parts.parts.machine_id == machine);
                last_id = result.id;
                break;
            }
            case NextStatus::kClockBehind:
                require(last_id >= 0 && result.last_unix_ms > now &&
                        result.last_unix_ms == decode(last_id).parts.unix_ms);
                break;
            case NextStatus::kSequenceExhausted:
                require(last_id >= 0 && decode(last_id).parts.unix_ms == now);
                break;
            case NextStatus::kPastIssueLimit:
                require(now > limit);
                break;
            case NextStatus::kClockOutOfRange:
                require(now < kEpochUnixMs || now > kMaxUnixMs);
                break;
        }
    }
}

}  // namespace

// The fleet list splits into spans inside the text that hold no separator and no surrounding
// space, in order; the members' answers never make a member without a pair a duplicate, and this
// server is fenced exactly when a member holds its pair, which that member's answer alone shows.
void check_fleet(Input &input) {
    char list[400];
    const size_t size = input.take<uint8_t>() % (sizeof(list) - 1);
    const char alphabet[] = {';', ' ', '\t', 'a', '=', '\''};
    for (size_t i = 0; i < size; i++) {
        list[i] = alphabet[input.take<uint8_t>() % sizeof(alphabet)];
    }
    list[size] = '\0';
    FleetSpan spans[kMaxFleetMembers];
    const FleetSplit split = split_fleet_list(list, spans);
    size_t after_previous = 0;
    for (int i = 0; i < split.count; i++) {
        const FleetSpan &span = spans[i];
        require(span.length > 0 && span.begin >= after_previous &&
                span.begin + span.length <= size);
        require(list[span.begin] != ' ' && list[span.begin] != '\t');
        require(list[span.begin + span.length - 1] != ' ' &&
                list[span.begin + span.length - 1] != '\t');
        require(std::memchr(list + span.begin, ';', span.length) == nullptr);
        after_previous = span.begin + span.length;
    }

    constexpr int kMembers = 6;
    MemberAnswer answers[kMembers];
    for (MemberAnswer &answer : answers) {
        const uint8_t flags = input.take<uint8_t>();
        answer = {(flags & 1) != 0,
                  (flags & 2) != 0,
                  (flags & 4) != 0,
                  static_cast<int32_t>(input.take<uint8_t>() % 3) - 1,
                  static_cast<int32_t>(input.take<uint8_t>() % 3) - 1,
                  (flags & 8) != 0,
                  static_cast<uint64_t>(input.take<uint8_t>() % 3),
                  input.take<int16_t>()};
    }
    const ThisServer self{1, 1, 1};
    MemberAssessment assessments[kMembers];
    assess_fleet(answers, kMembers, self, 1000, assessments);
    bool held = false;
    for (int i = 0; i < kMembers; i++) {
        const MemberAnswer &answer = answers[i];
        const bool is_self =
            answer.answered && answer.has_instance_token && answer.instance_token == 1;
        require(assessments[i].self == is_self);
        const bool holds = answer.answered && !answer.in_recovery && answer.library_loaded &&
                           answer.datacenter_id >= 0 && answer.machine_id >= 0;
        const bool holds_ours =
            !is_self && holds && answer.datacenter_id == 1 && answer.machine_id == 1;
        require(((assessments[i].problem_bits & kSameNodeAsThisServer) != 0) == holds_ours);
        require(member_holds_this_node(answer, self) == holds_ours);
        require(!answer.answered == ((assessments[i].problem_bits & kUnreachable) != 0));
        held = held || holds_ours;
    }
    require(fleet_holds_this_node(assessments, kMembers) == held);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Input input(data, size);
    check_codec(input);
    check_id_text(input);
    check_mark_file(input);
    check_mark_rules(input);
    check_generator(input);
    check_fleet(input);
    return 0;
}
