import Foundation

/// How to order fetched objects: by an attribute, possibly through to-one relationships.
/// The same order holds in SQL and in memory (for unsaved changes and results
/// controllers): NULLs first when ascending, ties broken by row number.
public struct FetchSortDescriptor: Sendable, Hashable {
    public enum Comparison: Sendable, Hashable {
        /// Binary order (numbers numerically, text by its UTF-8 bytes).
        case binary
        /// Text ignoring case.
        case caseInsensitive
        /// Text as the Finder sorts it: case-insensitive, numbers by value ("file 2" < "file 10").
        case localizedStandard
    }

    public var keyPath: String
    public var ascending: Bool
    public var comparison: Comparison

    public init(_ keyPath: String, ascending: Bool = true, comparison: Comparison = .binary) {
        self.keyPath = keyPath
        self.ascending = ascending
        self.comparison = comparison
    }

    var path: [String] { keyPath.split(separator: ".").map(String.init) }

    /// The ORDER BY term for the column this descriptor's key path resolves to. NULLs
    /// come first, as SQLite orders them (PostgreSQL puts them last unless told). The
    /// comparisons other than `.binary` are about text: other columns sort by value, as
    /// `compare` sorts them.
    func sqlTerm(_ column: String, _ dialect: SQLDialect, isText: Bool) -> String {
        let key = switch comparison {
        case _ where !isText, .binary: column
        case .caseInsensitive: "ingest_fold(\(column), 1)"
        case .localizedStandard: "\(column) COLLATE ingest_localized"
        }
        let nulls = dialect == .postgres ? (ascending ? " NULLS FIRST" : " NULLS LAST") : ""
        return key + (ascending ? " ASC" : " DESC") + nulls
    }

    /// How two of this key's values order, as the SQL term orders them.
    func compare(_ x: Value?, _ y: Value?) -> ComparisonResult {
        let order: ComparisonResult
        switch (x, y) {
        case (nil, nil): order = .orderedSame
        case (nil, _): order = .orderedAscending
        case (_, nil): order = .orderedDescending
        case (.string(let a)?, .string(let b)?) where comparison == .localizedStandard:
            order = a.localizedStandardCompare(b)
        default:
            order = ValueComparison.order(x, y, comparison == .caseInsensitive ? .caseInsensitive : []) ?? .orderedSame
        }
        guard !ascending else { return order }
        return order == .orderedAscending ? .orderedDescending : order == .orderedDescending ? .orderedAscending : .orderedSame
    }

    /// Whether `a` comes before `b` under `descriptors`, then by row number.
    static func ordered(_ a: ManagedObject, before b: ManagedObject, by descriptors: [FetchSortDescriptor]) -> Bool {
        for descriptor in descriptors {
            let order = descriptor.compare(value(a, descriptor.path), value(b, descriptor.path))
            if order != .orderedSame { return order == .orderedAscending }
        }
        return (a.objectID.primaryKey ?? .max) < (b.objectID.primaryKey ?? .max)
    }

    static func value(_ object: ManagedObject, _ path: [String]) -> Value? {
        guard case .single(let value)? = try? IngestStore.PredicateComparison.resolve(.keyPath(path), object, allowMany: false) else { return nil }
        return value
    }
}
