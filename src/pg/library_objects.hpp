// This library's own catalog objects, recognised by OID rather than by name, since a role may
// make a function or a type of the same name (library_objects.cpp). Include only after
// postgres.h.
#pragma once

// The extension's schema in this database: its OID, and its name quoted for a statement.
struct ExtensionSchema {
    Oid oid;
    const char *quoted;
};

// The schema that CREATE EXTENSION snowflake chose, read from the catalog; found false where the
// extension is not installed in this database.
bool snowflake_find_extension_schema(ExtensionSchema *schema);

// The same for a function of the extension, which cannot run without it: an error where it is
// missing.
ExtensionSchema snowflake_extension_schema();

// Whether a function is the C function of this library with that symbol.
bool snowflake_is_library_function(Oid function, const char *symbol);

// The snowflake type (version 1.6) of the installation that the function belongs to (the same
// schema), or InvalidOid before 1.6.
Oid snowflake_id_type_beside(Oid function);

// The snowflake type of the installation in that schema (the extension's), or InvalidOid.
Oid snowflake_id_type_in(Oid schema);

// The schema that holds the extension's tables from version 1.12.
inline constexpr char kTablesSchema[] = "snowflake_catalog";

// One of the extension's own tables, by name: in snowflake_catalog (1.12 and later), else in the
// extension's schema, which held the setups before. Only a table that is a member of the
// extension counts, so a role's table of that name in either schema is never read; InvalidOid
// where the installation has none (the tracking tables before 1.12).
Oid snowflake_extension_table(Oid extension_schema, const char *name);
