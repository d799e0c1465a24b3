// Asking another server for its node ids, clock and instance token over libpq, within a time
// limit and cancellably: shared by snowflake_check_peers() (check_peers.cpp) and the fleet guard
// (fleet_guard.cpp). Include only after postgres.h: it is part of the glue.
#pragma once

#include <cstdint>
#include <type_traits>

extern "C" {
#include "libpq-fe.h"
#include "utils/timestamp.h"
}

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

// The connection string as it may be shown back: every setting, each one that libpq marks as
// secret (password, sslpassword, and any a later libpq adds) masked.
const char *snowflake_displayable_conninfo(PQconninfoOption *options);

// Starts a connection and drives it until it is up or the deadline passes; the connection is
// stored in *slot as soon as it exists, so that the caller closes it however this ends. False,
// with answer->failure set, when it is not up.
bool snowflake_connect_to_peer(const char *conninfo, const char *application_name,
                               TimestampTz deadline, int timeout_ms, PGconn *volatile *slot,
                               PeerAnswer *answer);

// Asks a connected server for its node ids, clock, token and state, and records the answer.
bool snowflake_query_peer(PGconn *connection, TimestampTz deadline, int timeout_ms,
                          PeerAnswer *answer);
