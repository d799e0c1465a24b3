// The version stamp of a tracked table (version 1.12): a BEFORE INSERT OR UPDATE row trigger that
// sets the version column from the generator in the writing transaction, whatever the statement
// gave it. A version is claimed for the settled bound as a key is, so a reader that follows the
// versions below the bound never skips a change. The error-boundary rules are at the top of
// module.cpp.

extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/rel.h"

PG_FUNCTION_INFO_V1(snowflake_stamp_version);
}

#include "pg/generation/generation.hpp"
#include "pg/library_objects.hpp"

namespace {

// Only the trigger that snowflake_track_changes() creates calls this function: anything else is
// a misuse that would stamp nothing or the wrong column, so it fails before it draws an id.
const char *version_column_of(const TriggerData *data) {
    const TriggerEvent event = data->tg_event;
    if (!TRIGGER_FIRED_BEFORE(event) || !TRIGGER_FIRED_FOR_ROW(event) ||
        !(TRIGGER_FIRED_BY_INSERT(event) || TRIGGER_FIRED_BY_UPDATE(event)) ||
        data->tg_trigger->tgnargs != 1) {
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("snowflake_stamp_version() must run as a BEFORE INSERT OR UPDATE "
                               "row trigger with the version column as its one argument"),
                        errhint("Let snowflake_track_changes() create the trigger.")));
    }
    return data->tg_trigger->tgargs[0];
}

// The column's number, once it is known to hold ids: bigint or this installation's snowflake type.
int stamped_attnum(const TriggerData *data, const char *column) {
    const TupleDesc desc = RelationGetDescr(data->tg_relation);
    const int attnum = SPI_fnumber(desc, column);
    if (attnum <= 0) {
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                        errmsg("the version column \"%s\" of %s does not exist", column,
                               RelationGetRelationName(data->tg_relation)),
                        errhint("Call snowflake_untrack_changes() and then "
                                "snowflake_track_changes() for the table again.")));
    }
    const Oid type = TupleDescAttr(desc, attnum - 1)->atttypid;
    if (type != INT8OID && type != snowflake_id_type_beside(data->tg_trigger->tgfoid)) {
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("the version column \"%s\" of %s is not of type bigint or snowflake",
                               column, RelationGetRelationName(data->tg_relation)),
                        errhint("Change the column back to bigint, or call "
                                "snowflake_untrack_changes() and snowflake_track_changes() again.")));
    }
    return attnum;
}

}  // namespace

// The row as the statement wrote it, with a new version from the generator.
Datum snowflake_stamp_version(PG_FUNCTION_ARGS) {
    if (!CALLED_AS_TRIGGER(fcinfo)) {
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("snowflake_stamp_version() must be called as a trigger"),
                        errhint("Let snowflake_track_changes() create the trigger.")));
    }
    const TriggerData *data = reinterpret_cast<TriggerData *>(fcinfo->context);
    int attnum = stamped_attnum(data, version_column_of(data));
    const HeapTuple row =
        TRIGGER_FIRED_BY_UPDATE(data->tg_event) ? data->tg_newtuple : data->tg_trigtuple;
    Datum version = Int64GetDatum(snowflake_draw_id());
    bool is_null = false;
    return PointerGetDatum(heap_modify_tuple_by_cols(row, RelationGetDescr(data->tg_relation), 1,
                                                     &attnum, &version, &is_null));
}
