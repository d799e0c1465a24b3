// Asking other servers for their node ids, clock and instance token over libpq, all at once, each
// within a time limit, and cancellably: shared by snowflake_check_peers() (check_peers.cpp) and
// the fleet guard (fleet_guard.cpp). Include only after postgres.h: it is part of the glue.
#pragma once

#include <cstdint>
#include <type_traits>

extern "C" {
#include "libpq-fe.h"
#include "utils/timestamp.h"
}

#include "core/fleet.hpp"

// What a server's settings say about its node ids.
enum class PeerNodeIds : uint8_t {
    kLibraryNotLoaded,  // the settings do not exist: the library is not preloaded
    kNotSet,            // one of them is -1
    kSet,
};

// What a server said, or why it said nothing.
struct PeerAnswer {
    bool answered;
    const char *failure;  // with answered false: why, in words (never quoting a password)
    PeerNodeIds node_ids;
    int datacenter_id;  // meaningful unless node_ids is kLibraryNotLoaded; -1 when not set
    int machine_id;
    bool extension_installed;  // in the database the connection string names
    bool in_recovery;          // a standby, which generates no ids
    bool has_instance_token;   // a library that has one (snowflake.instance_token)
    uint64_t instance_token;
    int64 clock_offset_ms;  // its clock minus this server's
};

static_assert(std::is_trivially_destructible_v<PeerAnswer>,
              "answers live across ereport calls and must own nothing");

// What a connection string says, read once for each of its uses (the fleet list's check, what the
// checks show back, what a caller who is not a superuser may ask for).
struct ConninfoFacts {
    bool parses;              // libpq can parse it; nothing else is set otherwise
    const char *displayable;  // every setting, each one libpq marks as secret masked
    bool gives_password;      // a non-empty password in the string itself
    bool carries_secret;      // a setting libpq marks as secret (password, sslpassword, ...)
    // A setting through which libpq would use the server's own files: its passfile, a service
    // file, a client certificate or key, a file to write TLS keys to. Only a superuser may lend
    // those out.
    bool names_server_files;
};

static_assert(std::is_trivially_destructible_v<ConninfoFacts>,
              "facts live across ereport calls and must own nothing");

// Reads the string with libpq's parser; a string it cannot parse is never quoted, since libpq's
// message would show a password in it.
ConninfoFacts snowflake_inspect_conninfo(const char *conninfo);

// Where a question stands while its round runs.
enum class PeerQuestionState : uint8_t {
    kConnecting,  // libpq is setting the connection up
    kSending,     // the query is sent, part of it still in libpq's buffer
    kReceiving,   // waiting for the answer
    kDone,        // answered or failed, and the connection closed
};

// One server to ask in a round, and what it said. Only conninfo and require_password are set by
// the caller (the rest zeroed); the others are the round's.
struct PeerQuestion {
    const char *conninfo;
    // For a caller who is not a superuser, who may not lend out the server's own credentials: the
    // connection offers no client certificate and reads no passfile, and only an answer over a
    // connection that used the string's password counts.
    bool require_password;
    PeerAnswer answer;
    PeerQuestionState state;
    PGconn *connection;
    bool holds_external_fd;  // counted with AcquireExternalFD()
    int wait_events;         // WL_SOCKET_* that the connection waits for
    TimestampTz deadline;
    TimestampTz sent_at;
};

static_assert(std::is_trivially_destructible_v<PeerQuestion>,
              "questions live across ereport calls and must own nothing");

// Called as soon as one question is done, answered or not, while the others still run.
using PeerAnswered = void (*)(int index, const PeerAnswer &answer, void *context);

// Asks every server at once, each within timeout_ms of the round's start, and returns when all
// have answered, failed or timed out. A cancel or a shutdown ends the round at once, postmaster
// death exits; every connection is closed however the round ends. on_answer may be null.
void snowflake_ask_peers(PeerQuestion *questions, int count, const char *application_name,
                         int timeout_ms, PeerAnswered on_answer, void *context);

// The answer in the core's terms, for the rules that both checks apply (core/fleet.hpp).
snowflake::MemberAnswer snowflake_member_answer(const PeerAnswer &answer);

// The words for a member's problem bits, in the order of the bits, as both checks report them;
// limit_name is the setting or argument that bounds the clock offset, limit_ms its value.
const char *snowflake_member_problem_words(const snowflake::MemberAssessment &assessment,
                                           const PeerAnswer &answer, const char *limit_name,
                                           int limit_ms);
