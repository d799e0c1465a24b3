// The extension's settings' variables (settings.hpp), and the node ids' values that the
// configuration gave but the server rejected. module.cpp defines the other settings.

extern "C" {
#include "postgres.h"

#include "utils/guc.h"
}

#include "core/layout.hpp"
#include "pg/settings.hpp"

int snowflake_datacenter_id_setting = -1;
int snowflake_machine_id_setting = -1;
int snowflake_max_clock_rollback_wait_setting = 0;
int snowflake_key_floor_max_lead_setting = 60000;
bool snowflake_time_predicates_setting = true;
char *snowflake_fleet_setting = nullptr;
int snowflake_fleet_check_interval_setting = 60;
int snowflake_on_duplicate_node_setting = kFleetDuplicateWarn;
int snowflake_max_clock_offset_setting = 1000;
int snowflake_partition_owner_share_setting = 120;

namespace {

// A node-id setting and the configuration's value for it that the server rejected at start.
struct NodeSetting {
    const char *name;
    const char *description;
    int *value;
    int max;
    char rejected[32];
};

NodeSetting node_settings[] = {
    {"snowflake.datacenter_id", "Datacenter id (0-31) written into every Snowflake id.",
     &snowflake_datacenter_id_setting, snowflake::kMaxDatacenterId, ""},
    {"snowflake.machine_id", "Machine id (0-31) written into every Snowflake id.",
     &snowflake_machine_id_setting, snowflake::kMaxMachineId, ""},
};

// PostgreSQL only warns when the configuration's value for a setting that a library defines is
// invalid, and keeps the default; the value is read beforehand (it is still a placeholder) so
// that snowflake_nextval() can name it.
void define_node_setting(NodeSetting *setting) {
    const char *configured = GetConfigOption(setting->name, true, false);
    if (configured != nullptr) {
        strlcpy(setting->rejected, configured, sizeof(setting->rejected));
    }
    DefineCustomIntVariable(setting->name, setting->description,
                            "-1 means not set: snowflake_nextval() refuses to run until it is set.",
                            setting->value, -1, -1, setting->max, PGC_SIGHUP, 0, nullptr, nullptr,
                            nullptr);
    if (*setting->value != -1 || strcmp(setting->rejected, "-1") == 0) {
        setting->rejected[0] = '\0';
    }
}

}  // namespace

void snowflake_define_node_settings() {
    for (NodeSetting &setting : node_settings) {
        define_node_setting(&setting);
    }
}

const char *snowflake_rejected_setting_value(const char *name) {
    for (const NodeSetting &setting : node_settings) {
        if (strcmp(setting.name, name) == 0 && setting.rejected[0] != '\0') {
            return setting.rejected;
        }
    }
    return nullptr;
}
