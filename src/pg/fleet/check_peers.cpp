// snowflake_check_peers(): the start-up check of Twitter's original service, on demand. It
// connects to every peer with libpq (all at once, each within the time limit), reads
// the peer's node ids and clock, and reports for every peer what is wrong, if anything: a node
// pair that another server also uses, ids not set, the extension missing or not preloaded, no
// answer, or a clock too far from this server's.
//
// Connections (peer_query.cpp). Every connection is closed before the function returns, also when
// an error or a cancel ends it early; every wait is cancellable.
// Like dblink, a caller who is not a superuser must authenticate to the peer with a password, so
// that the server's own credentials (its .pgpass, trust or peer authentication) are not lent out.
// The error-boundary rules are stated at the top of module.cpp.

#include <type_traits>

extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/execnodes.h"
#include "lib/stringinfo.h"
#include "libpq-fe.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(snowflake_check_peers);
PG_FUNCTION_INFO_V1(snowflake_check_peers_with_fleet_rules);
}

#include "core/fleet.hpp"
#include "pg/fleet/fleet_memory.hpp"
#include "pg/fleet/peer_query.hpp"
#include "pg/settings.hpp"

namespace {

// What one peer said, or why it said nothing, and what is wrong with it.
struct PeerReport {
    const char *peer;     // the connection string, password hidden
    bool gives_password;  // a password in the string itself, and none of the server's files
    PeerAnswer answer;
    StringInfoData problem_words;  // what the problem column shows
};

static_assert(std::is_trivially_destructible_v<PeerReport>,
              "reports live across ereport calls and must own nothing");

// A peer may have several problems; all are reported, separated by semicolons.
void add_problem(PeerReport *report, const char *problem) {
    if (report->problem_words.len > 0) {
        appendStringInfoString(&report->problem_words, "; ");
    }
    appendStringInfoString(&report->problem_words, problem);
}

// The rules of versions 1.1 to 1.4, for a database whose extension is not updated yet: a pair
// compared by value alone, so that this server listed, a standby or one server listed twice is
// reported as a duplicate. ALTER EXTENSION snowflake UPDATE brings the fleet guard's rules.
void add_problems_by_own_rules(PeerReport *reports, int count, int max_offset_ms) {
    for (int i = 0; i < count; i++) {
        PeerReport *report = &reports[i];
        const PeerAnswer &answer = report->answer;
        if (!answer.answered) {
            continue;
        }
        if (answer.node_ids == PeerNodeIds::kLibraryNotLoaded) {
            add_problem(report, "snowflake is not in shared_preload_libraries");
        } else if (answer.node_ids == PeerNodeIds::kNotSet) {
            add_problem(report, "node ids not set");
        }
        if (!answer.extension_installed) {
            add_problem(report, "extension snowflake is not installed in that database");
        }
        if (answer.node_ids == PeerNodeIds::kSet) {
            if (answer.datacenter_id == snowflake_datacenter_id_setting &&
                answer.machine_id == snowflake_machine_id_setting) {
                add_problem(report, "same node pair as this server");
            }
            for (int j = 0; j < count; j++) {
                const PeerAnswer &other = reports[j].answer;
                if (j != i && other.answered && other.node_ids == PeerNodeIds::kSet &&
                    other.datacenter_id == answer.datacenter_id &&
                    other.machine_id == answer.machine_id) {
                    add_problem(report, psprintf("same node pair as peer %d", j + 1));
                }
            }
        }
        if (answer.clock_offset_ms > max_offset_ms || answer.clock_offset_ms < -max_offset_ms) {
            add_problem(report, psprintf("clock offset beyond %d ms", max_offset_ms));
        }
    }
}

// The fleet guard's rules (core/fleet.hpp), in its words: this server is recognised by its
// instance token, a standby holds no pair, one server listed twice is one server. A peer that was
// not asked already says why; the extension missing is the peer check's own problem.
void add_problems_by_fleet_rules(PeerReport *reports, const bool *asked, int count,
                                 int max_offset_ms) {
    auto *members =
        static_cast<snowflake::MemberAnswer *>(palloc0(sizeof(snowflake::MemberAnswer) * count));
    auto *assessments = static_cast<snowflake::MemberAssessment *>(
        palloc0(sizeof(snowflake::MemberAssessment) * count));
    for (int i = 0; i < count; i++) {
        members[i] = snowflake_member_answer(reports[i].answer);
    }
    const snowflake::ThisServer self{snowflake_own_instance_token(),
                                     static_cast<int32_t>(snowflake_datacenter_id_setting),
                                     static_cast<int32_t>(snowflake_machine_id_setting)};
    snowflake::assess_fleet(members, count, self, max_offset_ms, assessments);
    for (int i = 0; i < count; i++) {
        PeerReport *report = &reports[i];
        if (!asked[i]) {
            continue;
        }
        const char *words = snowflake_member_problem_words(assessments[i], report->answer,
                                                           "max_clock_offset_ms", max_offset_ms);
        if (words[0] != '\0') {
            add_problem(report, words);
        }
        if (report->answer.answered && !report->answer.extension_installed) {
            add_problem(report, "extension snowflake is not installed in that database");
        }
    }
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
// it, and what it says about credentials decides what a caller who is not a superuser may do.
PeerReport new_report(const char *conninfo, int position) {
    const ConninfoFacts facts = snowflake_inspect_conninfo(conninfo);
    if (!facts.parses) {
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
    report.peer = facts.displayable;
    report.gives_password = facts.gives_password && !facts.names_server_files;
    report.answer.node_ids = PeerNodeIds::kLibraryNotLoaded;
    initStringInfo(&report.problem_words);
    return report;
}

// One result row per peer; a value the peer did not give is NULL.
void emit_reports(FunctionCallInfo fcinfo, const PeerReport *reports, int count) {
    InitMaterializedSRF(fcinfo, 0);
    const auto *result_info = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    Tuplestorestate *store = result_info->setResult;
    const TupleDesc tupdesc = result_info->setDesc;
    for (int r = 0; r < count; r++) {
        const PeerReport &report = reports[r];
        const PeerAnswer &answer = report.answer;
        // An id the peer has set is shown even when the other one is not.
        const bool settings_read =
            answer.answered && answer.node_ids != PeerNodeIds::kLibraryNotLoaded;
        Datum values[kPeerColumnCount];
        bool nulls[kPeerColumnCount];
        int i = 0;
        values[i] = CStringGetTextDatum(report.peer);
        nulls[i++] = false;
        values[i] = Int32GetDatum(answer.datacenter_id);
        nulls[i++] = !settings_read || answer.datacenter_id < 0;
        values[i] = Int32GetDatum(answer.machine_id);
        nulls[i++] = !settings_read || answer.machine_id < 0;
        values[i] = Int64GetDatum(answer.clock_offset_ms);
        nulls[i++] = !answer.answered;
        values[i] = CStringGetTextDatum(report.problem_words.data);
        nulls[i++] = report.problem_words.len == 0;
        Assert(i == kPeerColumnCount);
        tuplestore_putvalues(store, tupdesc, values, nulls);
    }
}

// Which rules judge the answers: the SQL definition of each extension version names its entry.
enum class PeerRules : uint8_t { kOwn, kFleet };

// Asks every peer at once and reports what is wrong with each, by the given rules.
Datum check_peers(FunctionCallInfo fcinfo, PeerRules rules) {
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
    // A caller who is not a superuser must give a password for a peer to be asked at all.
    auto *questions = static_cast<PeerQuestion *>(palloc0(sizeof(PeerQuestion) * count));
    auto *question_of = static_cast<int *>(palloc0(sizeof(int) * count));
    auto *asked = static_cast<bool *>(palloc0(sizeof(bool) * count));
    int asked_count = 0;
    for (int i = 0; i < count; i++) {
        if (!superuser() && !reports[i].gives_password) {
            add_problem(&reports[i],
                        "not checked: a caller who is not a superuser must give a password in the "
                        "connection string, and no setting that uses the server's own files "
                        "(passfile, service, servicefile, sslcert, sslkey, sslkeylogfile)");
            continue;
        }
        questions[asked_count].conninfo = conninfos[i];
        questions[asked_count].require_password = !superuser();
        question_of[asked_count++] = i;
        asked[i] = true;
    }
    snowflake_ask_peers(questions, asked_count, "snowflake_check_peers", PG_GETARG_INT32(2),
                        nullptr, nullptr);
    for (int q = 0; q < asked_count; q++) {
        reports[question_of[q]].answer = questions[q].answer;
    }
    if (rules == PeerRules::kFleet) {
        add_problems_by_fleet_rules(reports, asked, count, PG_GETARG_INT32(1));
    } else {
        for (int i = 0; i < count; i++) {
            if (asked[i] && !reports[i].answer.answered) {
                add_problem(&reports[i], reports[i].answer.failure);
            }
        }
        add_problems_by_own_rules(reports, count, PG_GETARG_INT32(1));
    }
    emit_reports(fcinfo, reports, count);
    return static_cast<Datum>(0);
}

}  // namespace

// Checks that the given servers can generate alongside this one without colliding, by the rules
// of versions 1.1 to 1.4.
Datum snowflake_check_peers(PG_FUNCTION_ARGS) {
    return check_peers(fcinfo, PeerRules::kOwn);
}

// The same check by the fleet guard's rules, from version 1.5 on.
Datum snowflake_check_peers_with_fleet_rules(PG_FUNCTION_ARGS) {
    return check_peers(fcinfo, PeerRules::kFleet);
}
