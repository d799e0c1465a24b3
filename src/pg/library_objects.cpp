// Recognising this library's catalog objects: a function by its language, C symbol and library,
// the snowflake type by its input function. A role's function or type of the same name is none
// of them.

extern "C" {
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_language.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include "pg/library_objects.hpp"

namespace {

// The library as the extension's scripts name it (module_pathname in snowflake.control).
constexpr char kLibraryPath[] = "$libdir/snowflake";

}  // namespace

// Read by the extension's OID from pg_extension, which has no syscache, so that no SQL runs.
bool snowflake_find_extension_schema(ExtensionSchema *schema) {
    const Oid extension = get_extension_oid("snowflake", true);
    if (!OidIsValid(extension)) {
        return false;
    }
    Relation extensions = table_open(ExtensionRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
                ObjectIdGetDatum(extension));
    SysScanDesc scan = systable_beginscan(extensions, ExtensionOidIndexId, true, nullptr, 1, &key);
    const HeapTuple tuple = systable_getnext(scan);
    const Oid oid = HeapTupleIsValid(tuple)
                        ? reinterpret_cast<Form_pg_extension>(GETSTRUCT(tuple))->extnamespace
                        : InvalidOid;
    systable_endscan(scan);
    table_close(extensions, AccessShareLock);
    const char *name = OidIsValid(oid) ? get_namespace_name(oid) : nullptr;
    if (name == nullptr) {
        return false;
    }
    *schema = ExtensionSchema{oid, quote_identifier(name)};
    return true;
}

// A function of the extension can outlive it (ALTER EXTENSION ... DROP FUNCTION), and then says
// so rather than fail on a missing object.
ExtensionSchema snowflake_extension_schema() {
    ExtensionSchema schema{InvalidOid, nullptr};
    if (!snowflake_find_extension_schema(&schema)) {
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("the extension snowflake is not installed in this database"),
                        errhint("Run CREATE EXTENSION snowflake first.")));
    }
    return schema;
}

// A function of another library with the same symbol, or a wrapper in another language, is not
// this library's.
bool snowflake_is_library_function(Oid function, const char *symbol) {
    HeapTuple tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(function));
    if (!HeapTupleIsValid(tuple)) {
        return false;
    }
    bool matches = false;
    if (reinterpret_cast<Form_pg_proc>(GETSTRUCT(tuple))->prolang == ClanguageId) {
        bool source_is_null = true;
        bool library_is_null = true;
        const Datum source = SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_prosrc, &source_is_null);
        const Datum library =
            SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_probin, &library_is_null);
        matches = !source_is_null && !library_is_null &&
                  strcmp(TextDatumGetCString(source), symbol) == 0 &&
                  strcmp(TextDatumGetCString(library), kLibraryPath) == 0;
    }
    ReleaseSysCache(tuple);
    return matches;
}

Oid snowflake_id_type_beside(Oid function) {
    return snowflake_id_type_in(get_func_namespace(function));
}

// Recognised by its input function, since before 1.6 a role may have made a type of that name in
// the extension's schema.
Oid snowflake_id_type_in(Oid schema) {
    const Oid type = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("snowflake"),
                                     ObjectIdGetDatum(schema));
    if (!OidIsValid(type)) {
        return InvalidOid;
    }
    HeapTuple tuple = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
    if (!HeapTupleIsValid(tuple)) {
        return InvalidOid;
    }
    const Oid input = reinterpret_cast<Form_pg_type>(GETSTRUCT(tuple))->typinput;
    ReleaseSysCache(tuple);
    return snowflake_is_library_function(input, "snowflake_in") ? type : InvalidOid;
}

// Membership decides, not the name: a role with CREATE on the database may make a schema named
// snowflake_catalog before the update to 1.12, and a role with CREATE on the extension's schema
// may make a table named like one of 1.12's there while the installation is older.
Oid snowflake_extension_table(Oid extension_schema, const char *name) {
    const Oid extension = get_extension_oid("snowflake", true);
    const Oid schemas[2] = {get_namespace_oid(kTablesSchema, true), extension_schema};
    for (const Oid schema : schemas) {
        const Oid table = OidIsValid(schema) ? get_relname_relid(name, schema) : InvalidOid;
        if (OidIsValid(table) && get_rel_relkind(table) == RELKIND_RELATION &&
            OidIsValid(extension) && getExtensionOfObject(RelationRelationId, table) == extension) {
            return table;
        }
    }
    return InvalidOid;
}
