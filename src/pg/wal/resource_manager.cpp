// The extension's WAL resource manager: registration, and the dispatch of each record to the
// room that replays it. Marks go to the mark's room, claims of prepared transactions to the
// settled bound's. It runs in the startup process, during crash recovery and on standbys.

extern "C" {
#include "postgres.h"

#include "access/xlog_internal.h"
#include "access/xlogreader.h"
#include "lib/stringinfo.h"
}

#include "pg/mark/mark.hpp"
#include "pg/settled/settled.hpp"
#include "pg/wal/wal.hpp"
#include "pg/wal_records.hpp"

namespace {

// Each record to its replay; an unknown one stops replay rather than be skipped.
void redo(XLogReaderState *record) {
    const uint8 info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
    if (info == kXlogMark) {
        snowflake_redo_mark(record);
    } else if (info == kXlogClaim) {
        snowflake_redo_claim(record);
    } else {
        elog(PANIC, "snowflake_redo: unknown op code %u", info);
    }
}

// What pg_waldump and replay errors show for a record.
void describe(StringInfo buf, XLogReaderState *record) {
    if ((XLogRecGetInfo(record) & ~XLR_INFO_MASK) == kXlogClaim) {
        snowflake_describe_claim(buf, record);
    } else {
        snowflake_describe_mark(buf, record);
    }
}

// The record type's name for pg_waldump's statistics.
const char *identify(uint8 info) {
    switch (info & ~XLR_INFO_MASK) {
        case kXlogMark:
            return "MARK";
        case kXlogClaim:
            return "CLAIM";
        default:
            return nullptr;
    }
}

RmgrData snowflake_rmgr = {
    "snowflake", redo, describe, identify, nullptr, nullptr, nullptr, nullptr,
};

}  // namespace

void snowflake_register_wal_resource_manager() {
    RegisterCustomRmgr(kSnowflakeRmgrId, &snowflake_rmgr);
}
