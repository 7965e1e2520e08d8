import CSQLite

/// A save's row statements on SQLite, bound straight from the objects' values with the
/// C API: no argument arrays, each entity's INSERT prepared once a save. Saving is the
/// object path's hot loop (`ingest bench store`).
extension ObjectContext {
    struct SQLiteRows {
        let db: SQLiteDatabase
        private var inserts: [ObjectIdentifier: SQLiteStatement] = [:]

        init(_ db: SQLiteDatabase) { self.db = db }

        mutating func insert(_ object: ManagedObject, key: (ObjectID?) -> Int64?) throws {
            let statement: SQLiteStatement
            if let cached = inserts[ObjectIdentifier(object.info)] {
                statement = cached
            } else {
                statement = try db.cachedStatement(sql: object.info.insertSQL)
                inserts[ObjectIdentifier(object.info)] = statement
            }
            SQLiteValues.bind((object.savedID ?? object.objectID).primaryKey, to: statement, at: 1)
            Self.bindRow(object, statement, from: 2, key: key)
            try SQLiteValues.stepToEnd(statement, db)
        }

        /// Writes an object's row over row `pk`; the number of rows changed (0: it is gone).
        func update(_ object: ManagedObject, pk: Int64, key: (ObjectID?) -> Int64?) throws -> Int {
            let info = object.info
            let statement = try db.cachedStatement(sql: info.updateSQL)
            Self.bindRow(object, statement, from: 1, key: key)
            SQLiteValues.bind(pk, to: statement, at: Int32(info.attributes.count + info.toOneColumns.count + 1))
            try SQLiteValues.stepToEnd(statement, db)
            return Int(sqlite3_changes(db.sqliteConnection))
        }

        func lookUp(_ sql: String, _ values: [Value]) throws -> Int64? {
            let statement = try db.cachedStatement(sql: sql)
            defer { sqlite3_reset(statement) }
            for (offset, value) in values.enumerated() { SQLiteValues.bind(value, to: statement, at: Int32(offset + 1)) }
            let code = sqlite3_step(statement)
            guard code == SQLITE_ROW else {
                if code == SQLITE_DONE { return nil }
                throw StoreError.sqlite(db)
            }
            return sqlite3_column_int64(statement, 0)
        }

        private static func bindRow(_ object: ManagedObject, _ statement: SQLiteStatement, from first: Int32, key: (ObjectID?) -> Int64?) {
            var index = first
            object.values.withUnsafeBufferPointer { values in
                for position in values.indices {
                    SQLiteValues.bind(values[position], to: statement, at: index)
                    index += 1
                }
            }
            for (relationship, _) in object.info.toOneColumns {
                SQLiteValues.bind(key(object.toOne[relationship]), to: statement, at: index)
                index += 1
            }
        }
    }
}
