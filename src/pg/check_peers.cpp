// snowflake_check_peers(): the start-up check of Twitter's original service, on demand. It
// connects to each peer with libpq (one after the other, each within its own time limit), reads
// the peer's node ids and clock, and reports for every peer what is wrong, if anything: a node
// pair that another server also uses, ids not set, the extension missing or not preloaded, no
// answer, or a clock too far from this server's.
//
// Connections. Every connection is closed before the function returns, also when an error or a
// cancel ends it early (PG_FINALLY). Waits go through WaitLatchOrSocket, so they are cancellable.
// Like dblink, a caller who is not a superuser must authenticate to the peer with a password, so
// that the server's own credentials (its .pgpass, trust or peer authentication) are not lent out.
// The error-boundary rules are stated at the top of module.cpp.

#include <type_traits>

extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "libpq-fe.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(snowflake_check_peers);
}

#include "pg/settings.hpp"

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
    "        WHERE e.extname OPERATOR(pg_catalog.=) 'snowflake')";

// What a peer's settings say about its node ids.
enum class PeerNodeIds : uint8_t {
    kLibraryNotLoaded,  // the settings do not exist: the library is not preloaded
    kNotSet,            // one of them is -1
    kSet,
};

// What one peer said, or why it said nothing.
struct PeerReport {
    const char *peer;     // the connection string, password hidden
    bool gives_password;  // a password in the string itself, and no passfile
    bool answered;
    PeerNodeIds node_ids;
    int datacenter_id;  // meaningful with node_ids kSet
    int machine_id;
    bool extension_installed;
    int64 clock_offset_ms;
    StringInfoData problems;
};

static_assert(std::is_trivially_destructible_v<PeerReport>,
              "reports live across ereport calls and must own nothing");

// The connection string as it may be shown back: every setting, each one that libpq marks as
// secret (password, sslpassword, and any a later libpq adds) masked.
const char *displayable_peer(PQconninfoOption *options) {
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

// A peer may have several problems; all are reported, separated by semicolons.
void add_problem(PeerReport *report, const char *problem) {
    if (report->problems.len > 0) {
        appendStringInfoString(&report->problems, "; ");
    }
    appendStringInfoString(&report->problems, problem);
}

// Waits for the connection's socket (or the latch, for a cancel) until the deadline; false when
// the deadline passed.
bool wait_for_socket(PGconn *connection, int events, TimestampTz deadline) {
    const long remaining_ms = (deadline - GetCurrentTimestamp()) / 1000;
    if (remaining_ms <= 0) {
        return false;
    }
    (void)WaitLatchOrSocket(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH | events,
                            PQsocket(connection), remaining_ms, PG_WAIT_EXTENSION);
    ResetLatch(MyLatch);
    CHECK_FOR_INTERRUPTS();
    return true;
}

// Drives an asynchronous connection to the end; false on failure or timeout, with a problem.
bool connect_within(PGconn *connection, TimestampTz deadline, int timeout_ms, PeerReport *report) {
    for (;;) {
        const PostgresPollingStatusType status = PQconnectPoll(connection);
        if (status == PGRES_POLLING_OK) {
            return true;
        }
        if (status == PGRES_POLLING_FAILED) {
            add_problem(report, psprintf("unreachable: %s", pchomp(PQerrorMessage(connection))));
            return false;
        }
        const int events =
            status == PGRES_POLLING_READING ? WL_SOCKET_READABLE : WL_SOCKET_WRITEABLE;
        if (!wait_for_socket(connection, events, deadline)) {
            add_problem(report, psprintf("did not answer within %d ms", timeout_ms));
            return false;
        }
    }
}

// Why the peer's answer is not the one row of four columns the query asks for, or null.
const char *answer_failure(PGconn *connection, const PGresult *result) {
    if (result == nullptr) {
        const char *message = pchomp(PQerrorMessage(connection));
        return message[0] != '\0' ? message : "the peer sent no result";
    }
    if (PQresultStatus(result) != PGRES_TUPLES_OK) {
        const char *message = pchomp(PQresultErrorMessage(result));
        return message[0] != '\0'
                   ? message
                   : psprintf("the peer answered %s", PQresStatus(PQresultStatus(result)));
    }
    const int rows = PQntuples(result);
    const int columns = PQnfields(result);
    if (rows != 1 || columns != 4) {
        return psprintf(
            "the peer answered %d row%s of %d column%s, where this check expects 1 "
            "row of 4; is it a PostgreSQL server?",
            rows, rows == 1 ? "" : "s", columns, columns == 1 ? "" : "s");
    }
    return nullptr;
}

// Sends the query and reads its one row; false on failure or timeout, with a problem.
bool query_within(PGconn *connection, TimestampTz deadline, int timeout_ms, PeerReport *report) {
    const TimestampTz sent_us = GetCurrentTimestamp();
    if (PQsendQuery(connection, kPeerQuery) == 0) {
        add_problem(report, psprintf("query failed: %s", pchomp(PQerrorMessage(connection))));
        return false;
    }
    while (PQisBusy(connection)) {
        if (!wait_for_socket(connection, WL_SOCKET_READABLE, deadline)) {
            add_problem(report, psprintf("did not answer within %d ms", timeout_ms));
            return false;
        }
        if (PQconsumeInput(connection) == 0) {
            add_problem(report, psprintf("unreachable: %s", pchomp(PQerrorMessage(connection))));
            return false;
        }
    }
    const TimestampTz received_us = GetCurrentTimestamp();
    PGresult *result = PQgetResult(connection);
    const char *failure = answer_failure(connection, result);
    const bool ok = failure == nullptr;
    if (!ok) {
        add_problem(report, psprintf("query failed: %s", failure));
    } else {
        report->answered = true;
        if (PQgetisnull(result, 0, 0) || PQgetisnull(result, 0, 1)) {
            report->node_ids = PeerNodeIds::kLibraryNotLoaded;
        } else {
            report->datacenter_id = atoi(PQgetvalue(result, 0, 0));
            report->machine_id = atoi(PQgetvalue(result, 0, 1));
            report->node_ids = report->datacenter_id < 0 || report->machine_id < 0
                                   ? PeerNodeIds::kNotSet
                                   : PeerNodeIds::kSet;
        }
        // PostgreSQL timestamps count from 2000; the peer's clock is read in Unix time.
        const int64 peer_unix_us = strtoll(PQgetvalue(result, 0, 2), nullptr, 10);
        const int64 local_unix_us =
            (sent_us + received_us) / 2 +
            (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * static_cast<int64>(USECS_PER_DAY);
        // A hostile peer may send any number: an offset past int64 counts as the largest one.
        int64 offset_us;
        if (pg_sub_s64_overflow(peer_unix_us, local_unix_us, &offset_us)) {
            offset_us = peer_unix_us > 0 ? PG_INT64_MAX : PG_INT64_MIN;
        }
        report->clock_offset_ms = offset_us / 1000;
        report->extension_installed = strcmp(PQgetvalue(result, 0, 3), "t") == 0;
    }
    // Nothing more is read: the caller closes the connection, so a peer that never says it is
    // ready again cannot hold this backend.
    PQclear(result);
    return ok;
}

// Connects, asks, and records the answer in the report. The connection is stored in *slot as
// soon as it exists, so that the caller closes it however this ends.
void ask_peer(const char *conninfo, int timeout_ms, PGconn *volatile *slot, PeerReport *report) {
    if (!superuser() && !report->gives_password) {
        add_problem(report,
                    "not checked: a caller who is not a superuser must give a password in the "
                    "connection string, and no passfile");
        return;
    }
    const char *keywords[] = {"dbname", "fallback_application_name", nullptr};
    const char *values[] = {conninfo, "snowflake_check_peers", nullptr};
    PGconn *connection = PQconnectStartParams(keywords, values, 1);
    if (connection == nullptr) {
        ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
    }
    *slot = connection;
    const TimestampTz deadline = GetCurrentTimestamp() + static_cast<int64>(timeout_ms) * 1000;
    if (PQstatus(connection) == CONNECTION_BAD) {
        add_problem(report, psprintf("unreachable: %s", pchomp(PQerrorMessage(connection))));
        return;
    }
    if (!connect_within(connection, deadline, timeout_ms, report)) {
        return;
    }
    if (!superuser() && !PQconnectionUsedPassword(connection)) {
        add_problem(report,
                    "not checked: a caller who is not a superuser must connect with a password");
        return;
    }
    query_within(connection, deadline, timeout_ms, report);
}

// Problems that need all answers: a node pair this server or another peer also uses, ids not
// set, the library or the extension missing, a clock too far off.
void add_fleet_problems(PeerReport *reports, int count, int max_offset_ms) {
    for (int i = 0; i < count; i++) {
        PeerReport *report = &reports[i];
        if (!report->answered) {
            continue;
        }
        if (report->node_ids == PeerNodeIds::kLibraryNotLoaded) {
            add_problem(report, "snowflake is not in shared_preload_libraries");
        } else if (report->node_ids == PeerNodeIds::kNotSet) {
            add_problem(report, "node ids not set");
        }
        if (!report->extension_installed) {
            add_problem(report, "extension snowflake is not installed in that database");
        }
        if (report->node_ids == PeerNodeIds::kSet) {
            if (report->datacenter_id == snowflake_datacenter_id_setting &&
                report->machine_id == snowflake_machine_id_setting) {
                add_problem(report, "same node pair as this server");
            }
            for (int j = 0; j < count; j++) {
                if (j != i && reports[j].answered && reports[j].node_ids == PeerNodeIds::kSet &&
                    reports[j].datacenter_id == report->datacenter_id &&
                    reports[j].machine_id == report->machine_id) {
                    add_problem(report, psprintf("same node pair as peer %d", j + 1));
                }
            }
        }
        if (report->clock_offset_ms > max_offset_ms || report->clock_offset_ms < -max_offset_ms) {
            add_problem(report, psprintf("clock offset beyond %d ms", max_offset_ms));
        }
    }
}

// Sets up a materialized result set in the per-query context, the way every PostgreSQL version
// from 13 on accepts it.
Tuplestorestate *begin_result_set(FunctionCallInfo fcinfo, TupleDesc *tupdesc) {
    auto *result_info = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    if (result_info == nullptr || !IsA(result_info, ReturnSetInfo) ||
        (result_info->allowedModes & SFRM_Materialize) == 0) {
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("snowflake_check_peers() must be called in a FROM clause or as a "
                               "set-returning function")));
    }
    if (get_call_result_type(fcinfo, nullptr, tupdesc) != TYPEFUNC_COMPOSITE) {
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("snowflake_check_peers() must return a composite type")));
    }
    MemoryContext caller_context =
        MemoryContextSwitchTo(result_info->econtext->ecxt_per_query_memory);
    *tupdesc = CreateTupleDescCopy(*tupdesc);
    Tuplestorestate *store = tuplestore_begin_heap(true, false, work_mem);
    MemoryContextSwitchTo(caller_context);
    result_info->returnMode = SFRM_Materialize;
    result_info->setResult = store;
    result_info->setDesc = *tupdesc;
    return store;
}

// The columns of a result row: peer, datacenter_id, machine_id, clock_offset_ms, problem.
constexpr int kPeerColumnCount = 5;

// A check of nothing would pass, so a missing argument or an empty list is an error, as is a
// limit that no answer could meet; every hint says what to pass instead.
void check_arguments(FunctionCallInfo fcinfo) {
    const char *argument_names[] = {"peers", "max_clock_offset_ms", "timeout_ms"};
    const char *argument_hints[] = {
        "List the connection strings of every other server that generates ids, such as "
        "ARRAY['host=shard1 port=5432 dbname=app'].",
        "Give the largest clock difference to accept, in milliseconds, or leave the argument out "
        "for the default of 10000.",
        "Give the time allowed for each peer, in milliseconds, or leave the argument out for the "
        "default of 5000.",
    };
    for (int i = 0; i < PG_NARGS(); i++) {
        if (PG_ARGISNULL(i)) {
            ereport(ERROR,
                    (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                     errmsg("%s of snowflake_check_peers() must not be NULL", argument_names[i]),
                     errhint("%s", argument_hints[i])));
        }
    }
    if (PG_GETARG_INT32(1) < 0 || PG_GETARG_INT32(2) <= 0) {
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("max_clock_offset_ms must be at least 0 and timeout_ms above 0"),
                        errhint("Leave either argument out for its default (10000 and 5000 ms).")));
    }
}

// A report for one connection string, validated before any connection is made: libpq must parse
// it, and whether it carries a password decides what a caller who is not a superuser may do.
PeerReport new_report(const char *conninfo, int position) {
    char *parse_error = nullptr;
    PQconninfoOption *options = PQconninfoParse(conninfo, &parse_error);
    if (options == nullptr) {
        // libpq's message quotes the string, password and all: it is never shown or logged.
        PQfreemem(parse_error);
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                 errmsg("invalid connection string for peer %d", position),
                 errdetail("libpq cannot parse it; its own message is not shown, since it may "
                           "quote a password from the string."),
                 errhint("Peers are libpq connection strings, such as "
                         "'host=shard1 port=5432 dbname=app' or "
                         "'postgresql://user@shard1:5432/app'; in a URI, write a %% in a "
                         "password as %%25.")));
    }
    PeerReport report{};
    report.peer = displayable_peer(options);
    report.gives_password = true;
    for (PQconninfoOption *option = options; option->keyword != nullptr; option++) {
        const bool set = option->val != nullptr && option->val[0] != '\0';
        if (strcmp(option->keyword, "password") == 0 && !set) {
            report.gives_password = false;
        }
        if (strcmp(option->keyword, "passfile") == 0 && set) {
            report.gives_password = false;
        }
    }
    PQconninfoFree(options);
    report.node_ids = PeerNodeIds::kLibraryNotLoaded;
    initStringInfo(&report.problems);
    return report;
}

// One result row per peer; a value the peer did not give is NULL.
void emit_reports(FunctionCallInfo fcinfo, const PeerReport *reports, int count) {
    TupleDesc tupdesc;
    Tuplestorestate *store = begin_result_set(fcinfo, &tupdesc);
    for (int r = 0; r < count; r++) {
        const PeerReport &report = reports[r];
        // An id the peer has set is shown even when the other one is not.
        const bool settings_read =
            report.answered && report.node_ids != PeerNodeIds::kLibraryNotLoaded;
        Datum values[kPeerColumnCount];
        bool nulls[kPeerColumnCount];
        int i = 0;
        values[i] = CStringGetTextDatum(report.peer);
        nulls[i++] = false;
        values[i] = Int32GetDatum(report.datacenter_id);
        nulls[i++] = !settings_read || report.datacenter_id < 0;
        values[i] = Int32GetDatum(report.machine_id);
        nulls[i++] = !settings_read || report.machine_id < 0;
        values[i] = Int64GetDatum(report.clock_offset_ms);
        nulls[i++] = !report.answered;
        values[i] = CStringGetTextDatum(report.problems.data);
        nulls[i++] = report.problems.len == 0;
        Assert(i == kPeerColumnCount);
        tuplestore_putvalues(store, tupdesc, values, nulls);
    }
}

}  // namespace

// Checks that the given servers can generate alongside this one without colliding.
Datum snowflake_check_peers(PG_FUNCTION_ARGS) {
    check_arguments(fcinfo);
    Datum *elements;
    bool *nulls;
    int count;
    deconstruct_array(PG_GETARG_ARRAYTYPE_P(0), TEXTOID, -1, false, TYPALIGN_INT, &elements, &nulls,
                      &count);
    if (count == 0) {
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                 errmsg("the list of peers of snowflake_check_peers() is empty"),
                 errdetail("A check of no server finds no problem, and would pass unnoticed."),
                 errhint("List the connection strings of every other server that generates ids, "
                         "such as ARRAY['host=shard1 port=5432 dbname=app'].")));
    }
    auto *reports = static_cast<PeerReport *>(palloc0(sizeof(PeerReport) * count));
    auto **conninfos = static_cast<char **>(palloc0(sizeof(char *) * count));
    for (int i = 0; i < count; i++) {
        if (nulls[i]) {
            ereport(ERROR,
                    (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("peer %d is NULL", i + 1),
                     errhint("Remove it from the list, or give its connection string.")));
        }
        conninfos[i] = TextDatumGetCString(elements[i]);
        reports[i] = new_report(conninfos[i], i + 1);
    }
    // Whatever ends the loop (an error, a cancel), the open connection is closed.
    PGconn *volatile connection = nullptr;
    PG_TRY();
    {
        for (int i = 0; i < count; i++) {
            ask_peer(conninfos[i], PG_GETARG_INT32(2), &connection, &reports[i]);
            PQfinish(connection);
            connection = nullptr;
        }
    }
    PG_FINALLY();
    {
        if (connection != nullptr) {
            PQfinish(connection);
        }
    }
    PG_END_TRY();
    add_fleet_problems(reports, count, PG_GETARG_INT32(1));
    emit_reports(fcinfo, reports, count);
    return static_cast<Datum>(0);
}
