// Asking other servers for their node ids, clock and instance token (peer_query.hpp), all at
// once: every connection is started, then one wait event set over their sockets and the latch
// waits for whichever is ready, so a round takes as long as its slowest member, at most the time
// limit, however many never answer. The set is built anew for each wait, since libpq may change
// a connection's socket while it connects (another address, or a retry without SSL). A set latch
// ends the wait (a cancel or a shutdown takes effect at once), postmaster death exits. A host
// name is looked up by libpq itself, synchronously, when its connection is started, so only
// addresses are bounded by the time limit. Each open connection is counted with
// AcquireExternalFD(), as PostgreSQL asks of descriptors it does not open itself. The
// error-boundary rules are stated at the top of module.cpp.

extern "C" {
#include "postgres.h"

#include "common/int.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/fd.h"
#include "storage/latch.h"
#include "utils/timestamp.h"
}

#include "pg/compat.hpp"
#include "pg/fleet/peer_query.hpp"

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

// Closes the question's connection, if it has one, and gives its descriptor back.
void close_connection(PeerQuestion *question) {
    if (question->connection != nullptr) {
        PQfinish(question->connection);
        question->connection = nullptr;
    }
    if (question->holds_external_fd) {
        ReleaseExternalFD();
        question->holds_external_fd = false;
    }
}

// Ends a question, answered or not: its connection is closed at once, so that a round holds no
// descriptor longer than it must, and the caller hears of it while the others still run.
void finish(PeerQuestion *questions, int index, PeerAnswered on_answer, void *context) {
    close_connection(&questions[index]);
    questions[index].state = PeerQuestionState::kDone;
    if (on_answer != nullptr) {
        on_answer(index, questions[index].answer, context);
    }
}

// Starts the connection; false, with the failure recorded, when it cannot even start. libpq is
// first polled once the socket is writable, as its documentation says: PQconnectPoll on a socket
// whose connect is still under way takes it for connected and then blocks, without any time
// limit, in its first send.
bool start_connection(PeerQuestion *question, const char *application_name, TimestampTz deadline) {
    question->deadline = deadline;
    if (!AcquireExternalFD()) {
        return fail(&question->answer,
                    "not asked: this server has no file descriptor to spare for the connection "
                    "(see max_files_per_process)");
    }
    question->holds_external_fd = true;
    // Settings after dbname override those of the string it expands to. A path under /dev/null
    // names no file (ENOTDIR), so libpq offers no certificate and reads no passfile, not even the
    // server user's defaults in ~/.postgresql/ and ~/.pgpass.
    constexpr char kNoFile[] = "/dev/null/lent-by-no-one";
    const char *keywords[] = {
        "dbname", "fallback_application_name", "sslcert", "sslkey", "passfile", nullptr};
    const char *values[] = {
        question->conninfo, application_name, kNoFile, kNoFile, kNoFile, nullptr};
    if (!question->require_password) {
        keywords[2] = nullptr;
    }
    question->connection = PQconnectStartParams(keywords, values, 1);
    if (question->connection == nullptr) {
        ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
    }
    if (PQstatus(question->connection) == CONNECTION_BAD) {
        return fail(&question->answer,
                    psprintf("unreachable: %s", pchomp(PQerrorMessage(question->connection))));
    }
    question->state = PeerQuestionState::kConnecting;
    question->wait_events = WL_SOCKET_WRITEABLE;
    return true;
}

// Sends what libpq still holds of the query; then the question waits for the answer. True when
// that failed.
bool flush_query(PeerQuestion *question) {
    const int flushed = PQflush(question->connection);
    if (flushed < 0) {
        fail(&question->answer,
             psprintf("query failed: %s", pchomp(PQerrorMessage(question->connection))));
        return true;
    }
    if (flushed > 0) {
        // libpq's documentation: wait for either, since the server may be sending meanwhile.
        question->state = PeerQuestionState::kSending;
        question->wait_events = WL_SOCKET_READABLE | WL_SOCKET_WRITEABLE;
        return false;
    }
    question->state = PeerQuestionState::kReceiving;
    question->wait_events = WL_SOCKET_READABLE;
    return false;
}

// Moves a question on once its socket is ready; true when it is done, answered or failed.
bool advance(PeerQuestion *question) {
    PGconn *connection = question->connection;
    PeerAnswer *answer = &question->answer;
    switch (question->state) {
        case PeerQuestionState::kConnecting: {
            const PostgresPollingStatusType status = PQconnectPoll(connection);
            if (status == PGRES_POLLING_FAILED) {
                fail(answer, psprintf("unreachable: %s", pchomp(PQerrorMessage(connection))));
                return true;
            }
            if (status != PGRES_POLLING_OK) {
                question->wait_events =
                    status == PGRES_POLLING_READING ? WL_SOCKET_READABLE : WL_SOCKET_WRITEABLE;
                return false;
            }
            if (question->require_password && !PQconnectionUsedPassword(connection)) {
                fail(answer,
                     "not checked: a caller who is not a superuser must connect with a password");
                return true;
            }
            question->sent_at = GetCurrentTimestamp();
            if (PQsetnonblocking(connection, 1) != 0 || PQsendQuery(connection, kPeerQuery) == 0) {
                fail(answer, psprintf("query failed: %s", pchomp(PQerrorMessage(connection))));
                return true;
            }
            return flush_query(question);
        }
        case PeerQuestionState::kSending:
            if (PQconsumeInput(connection) == 0) {
                fail(answer, psprintf("unreachable: %s", pchomp(PQerrorMessage(connection))));
                return true;
            }
            return flush_query(question);
        case PeerQuestionState::kReceiving:
            break;
        case PeerQuestionState::kDone:  // never waited on
            return false;
    }
    if (PQconsumeInput(connection) == 0) {
        fail(answer, psprintf("unreachable: %s", pchomp(PQerrorMessage(connection))));
        return true;
    }
    if (PQisBusy(connection)) {
        return false;
    }
    const TimestampTz received_at = GetCurrentTimestamp();
    PGresult *result = PQgetResult(connection);
    const char *failure = answer_failure(connection, result);
    if (failure == nullptr) {
        read_answer(result, question->sent_at, received_at, answer);
    } else {
        fail(answer, psprintf("query failed: %s", failure));
    }
    // Nothing more is read: the connection is closed next, so a server that never says it is
    // ready again cannot hold this process.
    PQclear(result);
    return true;
}

// Waits until a socket is ready, the earliest deadline passes or the latch is set, then moves on
// every question whose socket is ready. The set is freed before the ready questions are moved
// on; if building it fails, the caller frees it through *set.
void wait_and_advance(PeerQuestion *questions, int count, int waiting, TimestampTz earliest,
                      WaitEvent *occurred, WaitEventSet *volatile *set, PeerAnswered on_answer,
                      void *context) {
    *set = snowflake_create_wait_event_set(waiting + 2);
    AddWaitEventToSet(*set, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, nullptr);
    AddWaitEventToSet(*set, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, nullptr, nullptr);
    for (int i = 0; i < count; i++) {
        if (questions[i].state != PeerQuestionState::kDone) {
            AddWaitEventToSet(*set, questions[i].wait_events, PQsocket(questions[i].connection),
                              nullptr, &questions[i]);
        }
    }
    // Rounded up, so that the wait does not end just before the deadline and spin.
    const long timeout_ms = Max((earliest - GetCurrentTimestamp() + 999) / 1000, 0);
    const int ready = WaitEventSetWait(*set, timeout_ms, occurred, waiting + 2,
                                       snowflake_wait_event("SnowflakePeerAnswer"));
    FreeWaitEventSet(*set);
    *set = nullptr;
    for (int e = 0; e < ready; e++) {
        if (occurred[e].events & WL_LATCH_SET) {
            ResetLatch(MyLatch);
            CHECK_FOR_INTERRUPTS();
            continue;
        }
        auto *question = static_cast<PeerQuestion *>(occurred[e].user_data);
        if (question != nullptr && (occurred[e].events & question->wait_events) != 0 &&
            advance(question)) {
            finish(questions, static_cast<int>(question - questions), on_answer, context);
        }
    }
}

// Starts every connection and drives them until each is done, closing each as it is done. A
// function of its own, so that none of its locals lives in the frame of the caller's PG_TRY.
pg_noinline void run_round(PeerQuestion *questions, int count, const char *application_name,
                           int timeout_ms, PeerAnswered on_answer, void *context,
                           WaitEventSet *volatile *set) {
    const TimestampTz deadline = GetCurrentTimestamp() + static_cast<int64>(timeout_ms) * 1000;
    for (int i = 0; i < count; i++) {
        if (!start_connection(&questions[i], application_name, deadline)) {
            finish(questions, i, on_answer, context);
        }
    }
    auto *occurred = static_cast<WaitEvent *>(palloc(sizeof(WaitEvent) * (count + 2)));
    for (;;) {
        const TimestampTz now = GetCurrentTimestamp();
        int waiting = 0;
        TimestampTz earliest = 0;
        for (int i = 0; i < count; i++) {
            PeerQuestion *question = &questions[i];
            if (question->state == PeerQuestionState::kDone) {
                continue;
            }
            if (now >= question->deadline) {
                fail(&question->answer, psprintf("did not answer within %d ms", timeout_ms));
                finish(questions, i, on_answer, context);
            } else if (PQsocket(question->connection) == PGINVALID_SOCKET) {
                fail(&question->answer, "unreachable: libpq has no socket for it");
                finish(questions, i, on_answer, context);
            } else {
                earliest = waiting++ == 0 ? question->deadline : Min(earliest, question->deadline);
            }
        }
        if (waiting == 0) {
            break;
        }
        wait_and_advance(questions, count, waiting, earliest, occurred, set, on_answer, context);
    }
}

}  // namespace

ConninfoFacts snowflake_inspect_conninfo(const char *conninfo) {
    // The settings through which libpq reads (or writes) the server's own files.
    static const char *const server_file_settings[] = {
        "passfile", "service", "servicefile", "sslcert", "sslkey", "sslkeylogfile",
    };
    ConninfoFacts facts{};
    char *parse_error = nullptr;
    PQconninfoOption *options = PQconninfoParse(conninfo, &parse_error);
    if (options == nullptr) {
        PQfreemem(parse_error);
        return facts;
    }
    facts.parses = true;
    StringInfoData text;
    initStringInfo(&text);
    for (PQconninfoOption *option = options; option->keyword != nullptr; option++) {
        if (option->val == nullptr || option->val[0] == '\0') {
            continue;
        }
        const bool secret = option->dispchar != nullptr && option->dispchar[0] == '*';
        appendStringInfo(&text, "%s%s=%s", text.len > 0 ? " " : "", option->keyword,
                         secret ? "********" : option->val);
        facts.carries_secret |= secret;
        facts.gives_password |= strcmp(option->keyword, "password") == 0;
        for (const char *setting : server_file_settings) {
            facts.names_server_files |= strcmp(option->keyword, setting) == 0;
        }
    }
    PQconninfoFree(options);
    facts.displayable = text.data;
    return facts;
}

void snowflake_ask_peers(PeerQuestion *questions, int count, const char *application_name,
                         int timeout_ms, PeerAnswered on_answer, void *context) {
    WaitEventSet *volatile set = nullptr;
    PG_TRY();
    { run_round(questions, count, application_name, timeout_ms, on_answer, context, &set); }
    PG_CATCH();
    {
        // A round that ends normally has closed every connection and freed its set.
        if (set != nullptr) {
            FreeWaitEventSet(set);
        }
        for (int i = 0; i < count; i++) {
            close_connection(&questions[i]);
        }
        PG_RE_THROW();
    }
    PG_END_TRY();
}

snowflake::MemberAnswer snowflake_member_answer(const PeerAnswer &answer) {
    snowflake::MemberAnswer member{};
    member.answered = answer.answered;
    member.in_recovery = answer.in_recovery;
    member.library_loaded = answer.node_ids != PeerNodeIds::kLibraryNotLoaded;
    member.datacenter_id = member.library_loaded ? answer.datacenter_id : -1;
    member.machine_id = member.library_loaded ? answer.machine_id : -1;
    member.has_instance_token = answer.has_instance_token;
    member.instance_token = answer.instance_token;
    member.clock_offset_ms = answer.clock_offset_ms;
    return member;
}

const char *snowflake_member_problem_words(const snowflake::MemberAssessment &assessment,
                                           const PeerAnswer &answer, const char *limit_name,
                                           int limit_ms) {
    StringInfoData text;
    initStringInfo(&text);
    auto add = [&text](const char *problem) {
        appendStringInfo(&text, "%s%s", text.len > 0 ? "; " : "", problem);
    };
    if (assessment.problem_bits & snowflake::kUnreachable) {
        add(answer.failure != nullptr ? answer.failure : "unreachable");
    }
    if (assessment.problem_bits & snowflake::kLibraryNotLoaded) {
        add("snowflake is not in shared_preload_libraries");
    }
    if (assessment.problem_bits & snowflake::kNodeIdsNotSet) {
        add("node ids not set");
    }
    if (assessment.problem_bits & snowflake::kSameNodeAsThisServer) {
        add(psprintf("holds this server's node pair (%d, %d)", answer.datacenter_id,
                     answer.machine_id));
    }
    if (assessment.problem_bits & snowflake::kSameNodeAsMember) {
        add(psprintf("same node pair as member %d", assessment.same_node_as + 1));
    }
    if (assessment.problem_bits & snowflake::kClockOffset) {
        add(psprintf("clock off by %lld ms (%s is %d ms)",
                     static_cast<long long>(answer.clock_offset_ms), limit_name, limit_ms));
    }
    return text.data;
}
