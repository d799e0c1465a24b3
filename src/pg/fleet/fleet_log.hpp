// The fleet guard's log of what changed between its checks (fleet_log.cpp), called by the worker
// after each check. Include only after postgres.h: it is part of the glue.
#pragma once

#include "pg/fleet/fleet_shared.hpp"

// Logs what changed since the last check: a member's problems appearing, changing or clearing,
// a member with problems leaving the list, and the fence going up (naming holder) or down.
void snowflake_log_fleet_changes(const MemberStatus *statuses, int count, bool fenced,
                                 const char *holder);
