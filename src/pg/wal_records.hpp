// The extension's WAL records: one resource manager, two kinds of record. The mark's room logs
// marks (src/pg/mark/), the settled bound's room logs claims (src/pg/settled/), and
// src/pg/wal/resource_manager.cpp registers the resource manager and sends each record to its
// replay. Include only after postgres.h.
#pragma once

#include "access/rmgr.h"

// The resource manager id of the records: 128, RM_EXPERIMENTAL_ID, the id PostgreSQL sets aside
// for extensions that have not registered one (README "Limits" says how an id is registered).
// Every record in WAL carries it, and only a library that registers the same id can replay them: a
// release that changes it must replay both ids until no WAL of the old one is left anywhere,
// standbys and archives included.
inline constexpr RmgrId kSnowflakeRmgrId = RM_EXPERIMENTAL_ID;
// The records: a mark, and a prepared transaction's claim (1.10).
inline constexpr uint8 kXlogMark = 0x00;
inline constexpr uint8 kXlogClaim = 0x10;
