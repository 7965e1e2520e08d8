#include <sqlite3.h>

/// sqlite3_db_config is variadic, which Swift cannot call: double-quoted text in SQL names
/// a column or table only, never a string literal (SQLite's legacy fallback), so a
/// misspelt identifier fails instead of matching a string.
static inline void ingest_sqlite3_disable_double_quoted_literals(sqlite3 *db) {
#if SQLITE_VERSION_NUMBER >= 3029000
    sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DDL, 0, (void *)0);
    sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DML, 0, (void *)0);
#endif
}

/// sqlite3_config is variadic too. Memory statistics off: with them on (SQLite's default),
/// every sqlite3_malloc and sqlite3_free takes a process-wide mutex to count bytes, about
/// 1,000 instructions a record of an import. Only before SQLite initializes; afterwards
/// SQLite refuses it (SQLITE_MISUSE) and nothing changes.
static inline int ingest_sqlite3_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
