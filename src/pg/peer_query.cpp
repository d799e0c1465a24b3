// Asking another server for its node ids, clock and instance token (peer_query.hpp). Waits go
// through WaitLatchOrSocket, so a cancel or a shutdown ends them; a host name is looked up by
// libpq itself, synchronously, so only addresses are bounded by the time limit. The
// error-boundary rules are stated at the top of module.cpp.

extern "C" {
#include "postgres.h"

#include "common/int.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/timestamp.h"
}

#include "pg/peer_query.hpp"

namespace {

// The settings are read from pg_settings as integers: a placeholder (set in postgresql.conf while
// the library is not loaded) is a string there. Every name and operator is qualified, so that a
// search_path in the connection string cannot change what the query reads.
constexpr char kPeerQuery[] =
    "SELECT (SELECT s.setting FROM pg_catalog.pg_settings s "
    "        WHERE s.name OPERATOR(pg_catalog.=) 'snowflake.datacenter_id' "
    "          AND s.vartype OPERATOR(pg_catalog.=) 'integer'), "
    "(SELECT s.setting FROM pg_catalog.pg_settings s "
    "  WHERE s.name OPERATOR(pg_catalog.=) 'snowflake.machine_id' "
    "    AND s.vartype OPERATOR(pg_catalog.=) 'integer'), "
    "(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) "
    " OPERATOR(pg_catalog.*) 1000000)::bigint, "
    "EXISTS (SELECT 1 FROM pg_catalog.pg_extension e "
    "        WHERE e.extname OPERATOR(pg_catalog.=) 'snowflake'), "
    "pg_catalog.pg_is_in_recovery(), "
    "(SELECT s.setting FROM pg_catalog.pg_settings s "
    "  WHERE s.name OPERATOR(pg_catalog.=) 'snowflake.instance_token')";

// The columns of the query's one row.
enum PeerColumn {
    kDatacenterId,
    kMachineId,
    kClockUnixUs,
    kExtension,
    kInRecovery,
    kToken,
    kCount
};

// Waits until the connection's socket is ready for the given events, or the deadline passes
// (false). A set latch (a cancel, a shutdown request, a reload) is served on the way. libpq is
// called only once the socket is ready: PQconnectPoll on a socket whose connect is still under
// way takes it for connected and then blocks, without any time limit, in its first send.
bool wait_for_socket(PGconn *connection, int events, TimestampTz deadline) {
    for (;;) {
        const long remaining_ms = (deadline - GetCurrentTimestamp()) / 1000;
        if (remaining_ms <= 0) {
            return false;
        }
        const int occurred =
            WaitLatchOrSocket(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH | events,
                              PQsocket(connection), remaining_ms, PG_WAIT_EXTENSION);
        if (occurred & WL_LATCH_SET) {
            ResetLatch(MyLatch);
            CHECK_FOR_INTERRUPTS();
        }
        if (occurred & events) {
            return true;
        }
    }
}

// Records why there is no answer.
bool fail(PeerAnswer *answer, const char *failure) {
    answer->answered = false;
    answer->failure = failure;
    return false;
}

// Why the answer is not the one row the query asks for, or null.
const char *answer_failure(PGconn *connection, const PGresult *result) {
    if (result == nullptr) {
        const char *message = pchomp(PQerrorMessage(connection));
        return message[0] != '\0' ? message : "the server sent no result";
    }
    if (PQresultStatus(result) != PGRES_TUPLES_OK) {
        const char *message = pchomp(PQresultErrorMessage(result));
        return message[0] != '\0'
                   ? message
                   : psprintf("the server answered %s", PQresStatus(PQresultStatus(result)));
    }
    const int rows = PQntuples(result);
    const int columns = PQnfields(result);
    if (rows != 1 || columns != kCount) {
        return psprintf(
            "the server answered %d row%s of %d column%s, where the check expects 1 row of %d; is "
            "it a PostgreSQL server?",
            rows, rows == 1 ? "" : "s", columns, columns == 1 ? "" : "s", kCount);
    }
    return nullptr;
}

// Reads the one row into the answer; the clock offset is taken against the middle of the round
// trip.
void read_answer(const PGresult *result, TimestampTz sent_us, TimestampTz received_us,
                 PeerAnswer *answer) {
    answer->answered = true;
    if (PQgetisnull(result, 0, kDatacenterId) || PQgetisnull(result, 0, kMachineId)) {
        answer->node_ids = PeerNodeIds::kLibraryNotLoaded;
    } else {
        answer->datacenter_id = atoi(PQgetvalue(result, 0, kDatacenterId));
        answer->machine_id = atoi(PQgetvalue(result, 0, kMachineId));
        answer->node_ids = answer->datacenter_id < 0 || answer->machine_id < 0
                               ? PeerNodeIds::kNotSet
                               : PeerNodeIds::kSet;
    }
    // PostgreSQL timestamps count from 2000; the server's clock is read in Unix time.
    const int64 peer_unix_us = strtoll(PQgetvalue(result, 0, kClockUnixUs), nullptr, 10);
    const int64 local_unix_us =
        (sent_us + received_us) / 2 +
        (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * static_cast<int64>(USECS_PER_DAY);
    // A hostile server may send any number: an offset past int64 counts as the largest one.
    int64 offset_us;
    if (pg_sub_s64_overflow(peer_unix_us, local_unix_us, &offset_us)) {
        offset_us = peer_unix_us > 0 ? PG_INT64_MAX : PG_INT64_MIN;
    }
    answer->clock_offset_ms = offset_us / 1000;
    answer->extension_installed = strcmp(PQgetvalue(result, 0, kExtension), "t") == 0;
    answer->in_recovery = strcmp(PQgetvalue(result, 0, kInRecovery), "t") == 0;
    // No token: a library before 1.4, which may generate. An empty one: a library that is loaded
    // without being preloaded, which has no generator.
    const bool token_known = !PQgetisnull(result, 0, kToken);
    answer->has_instance_token = token_known && PQgetvalue(result, 0, kToken)[0] != '\0';
    if (token_known && !answer->has_instance_token) {
        answer->node_ids = PeerNodeIds::kLibraryNotLoaded;
    }
    if (answer->has_instance_token) {
        answer->instance_token = strtoull(PQgetvalue(result, 0, kToken), nullptr, 16);
    }
}

}  // namespace

const char *snowflake_displayable_conninfo(PQconninfoOption *options) {
    StringInfoData text;
    initStringInfo(&text);
    for (PQconninfoOption *option = options; option->keyword != nullptr; option++) {
        if (option->val == nullptr || option->val[0] == '\0') {
            continue;
        }
        const bool secret = option->dispchar != nullptr && option->dispchar[0] == '*';
        appendStringInfo(&text, "%s%s=%s", text.len > 0 ? " " : "", option->keyword,
                         secret ? "********" : option->val);
    }
    return text.data;
}

bool snowflake_connect_to_peer(const char *conninfo, const char *application_name,
                               TimestampTz deadline, int timeout_ms, PGconn *volatile *slot,
                               PeerAnswer *answer) {
    const char *keywords[] = {"dbname", "fallback_application_name", nullptr};
    const char *values[] = {conninfo, application_name, nullptr};
    PGconn *connection = PQconnectStartParams(keywords, values, 1);
    if (connection == nullptr) {
        ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
    }
    *slot = connection;
    if (PQstatus(connection) == CONNECTION_BAD) {
        return fail(answer, psprintf("unreachable: %s", pchomp(PQerrorMessage(connection))));
    }
    for (;;) {
        const PostgresPollingStatusType status = PQconnectPoll(connection);
        if (status == PGRES_POLLING_OK) {
            return true;
        }
        if (status == PGRES_POLLING_FAILED) {
            return fail(answer, psprintf("unreachable: %s", pchomp(PQerrorMessage(connection))));
        }
        const int events =
            status == PGRES_POLLING_READING ? WL_SOCKET_READABLE : WL_SOCKET_WRITEABLE;
        if (!wait_for_socket(connection, events, deadline)) {
            return fail(answer, psprintf("did not answer within %d ms", timeout_ms));
        }
    }
}

bool snowflake_query_peer(PGconn *connection, TimestampTz deadline, int timeout_ms,
                          PeerAnswer *answer) {
    const TimestampTz sent_us = GetCurrentTimestamp();
    if (PQsendQuery(connection, kPeerQuery) == 0) {
        return fail(answer, psprintf("query failed: %s", pchomp(PQerrorMessage(connection))));
    }
    while (PQisBusy(connection)) {
        if (!wait_for_socket(connection, WL_SOCKET_READABLE, deadline)) {
            return fail(answer, psprintf("did not answer within %d ms", timeout_ms));
        }
        if (PQconsumeInput(connection) == 0) {
            return fail(answer, psprintf("unreachable: %s", pchomp(PQerrorMessage(connection))));
        }
    }
    const TimestampTz received_us = GetCurrentTimestamp();
    PGresult *result = PQgetResult(connection);
    const char *failure = answer_failure(connection, result);
    if (failure == nullptr) {
        read_answer(result, sent_us, received_us, answer);
    } else {
        fail(answer, psprintf("query failed: %s", failure));
    }
    // Nothing more is read: the caller closes the connection, so a server that never says it is
    // ready again cannot hold this process.
    PQclear(result);
    return failure == nullptr;
}
