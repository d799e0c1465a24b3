// Running a step as a table's owner in a security-restricted operation with search_path pinned,
// the way PostgreSQL's maintenance commands do (doc/design.md "The conversion"); shared by the
// conversion (convert.cpp) and the partition maintenance (partitions.cpp). Include after
// postgres.h.
#pragma once

// The search path every step runs with: nothing of another role's schema resolves by name.
inline constexpr char kPinnedSearchPath[] = "pg_catalog, pg_temp";

// What begin_as_owner changed, for end_as_owner to restore. An error in between is undone by the
// (sub)transaction's abort, which restores the user and the settings.
struct OwnerContext {
    Oid saved_user;
    int saved_security_context;
    int guc_nest_level;
};

// The owner, read fresh from the catalog: each step runs as the owner of its own table.
Oid owner_of(Oid relation);

// Switches to a table's owner in a security-restricted operation with search_path pinned.
OwnerContext begin_as_owner(Oid owner);

// Switches back, so that the next step starts from the caller again.
void end_as_owner(const OwnerContext &context);
