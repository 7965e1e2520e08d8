import Foundation

/// The changes one save makes, gathered for its history transaction: object rows by
/// entity, kind and (for updates) the properties changed, one stored row per group, and
/// deletes with their tombstones. A batch of a thousand new objects is one group: its
/// rows are stored as ranges (`12-1011`), so history costs the batch path a row, not a
/// row per object.
package struct HistoryChanges: Sendable {
    struct Group: Hashable, Sendable {
        var entity: String
        var kind: HistoryChange.Kind
        var properties: [String]
    }

    private(set) var groups: [Group: [Int64]] = [:]
    /// Groups in the order first met, so a save's history reads in the order it wrote.
    private(set) var order: [Group] = []
    /// Deleted objects with their uniqueness key values as JSON.
    private(set) var tombstones: [(entity: String, pk: Int64, tombstone: String)] = []

    package init() {}

    package var isEmpty: Bool { groups.isEmpty && tombstones.isEmpty }

    mutating func add(_ entity: String, _ kind: HistoryChange.Kind, rows: [Int64], properties: [String] = []) {
        guard !rows.isEmpty else { return }
        let group = Group(entity: entity, kind: kind, properties: properties)
        if groups[group] == nil { order.append(group) }
        groups[group, default: []].append(contentsOf: rows)
    }

    mutating func add(_ entity: String, _ kind: HistoryChange.Kind, row: Int64, properties: [String] = []) {
        add(entity, kind, rows: [row], properties: properties)
    }

    mutating func addDelete(_ entity: String, row: Int64, tombstone: [String: Value]) {
        tombstones.append((entity, row, HistoryValues.json(tombstone)))
    }

    /// Adds what a later write of the same transaction changed.
    package mutating func merge(_ other: HistoryChanges) {
        for group in other.order { add(group.entity, group.kind, rows: other.groups[group]!, properties: group.properties) }
        tombstones += other.tombstones
    }

    /// The stored rows: per group its entity, kind, row list and properties, then the deletes.
    var storedRows: [(entity: String, kind: String, rows: String, properties: String?, tombstone: String?)] {
        order.map { group in
            (group.entity, group.kind.rawValue, RowList.text(groups[group]!),
             group.properties.isEmpty ? nil : group.properties.joined(separator: ","), nil)
        } + tombstones.map { ($0.entity, HistoryChange.Kind.delete.rawValue, String($0.pk), nil, $0.tombstone) }
    }
}

/// Row numbers as text: sorted, repeats dropped, runs as ranges (`1-500,502,610-612`).
enum RowList {
    static func text(_ rows: [Int64]) -> String {
        var sorted = rows
        sorted.sort()
        var text = ""
        var index = 0
        while index < sorted.count {
            let first = sorted[index]
            var last = first
            index += 1
            while index < sorted.count, sorted[index] <= last + 1 {
                last = sorted[index]
                index += 1
            }
            if !text.isEmpty { text.append(",") }
            text.append(String(first))
            if last != first { text.append("-"); text.append(String(last)) }
        }
        return text
    }

    /// The rows `text` lists, in order; nil when it is not such a list.
    static func rows(_ text: String) -> [Int64]? {
        ranges(text).map { $0.flatMap { Array($0) } }
    }

    /// The runs `text` lists, without making their rows; nil when it is not such a list.
    /// `text` writes them in increasing order without overlaps, so their rows add up to at
    /// most the last run's end: a bound checked on that end bounds what reading them makes.
    static func ranges(_ text: String) -> [ClosedRange<Int64>]? {
        var ranges: [ClosedRange<Int64>] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let bounds = item.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            guard let first = Int64(bounds[0]), first >= 0 else { return nil }
            let last = bounds.count == 2 ? Int64(bounds[1]) : first
            guard let last, last >= first, first > ranges.last?.upperBound ?? -1 else { return nil }
            ranges.append(first...last)
        }
        return ranges
    }
}

/// Tombstone values as JSON and back, by the attribute's type.
enum HistoryValues {
    static func json(_ values: [String: Value]) -> String {
        var object: [String: Any] = [:]
        for (name, value) in values {
            switch value {
            case .string(let text), .decimal(let text): object[name] = text
            case .int(let number): object[name] = number
            case .double(let number): object[name] = number
            case .bool(let flag): object[name] = flag
            case .date(let date): object[name] = date.timeIntervalSince1970
            case .binary(let bytes): object[name] = Data(bytes).base64EncodedString()
            case .uuid(let uuid): object[name] = uuid.uuidString
            }
        }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// The values of `text` (as `json` wrote them) read by `types`; names without a type are left out.
    static func values(_ text: String, types: [String: AttributeType]) -> [String: Value] {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else { return [:] }
        var values: [String: Value] = [:]
        for (name, raw) in object {
            guard let type = types[name] else { continue }
            switch type {
            case .string: if let text = raw as? String { values[name] = .string(text) }
            case .decimal: if let text = raw as? String { values[name] = .decimal(text) }
            case .uuid: if let text = raw as? String, let uuid = UUID(uuidString: text) { values[name] = .uuid(uuid) }
            case .binary: if let text = raw as? String, let data = Data(base64Encoded: text) { values[name] = .binary(Array(data)) }
            case .int16, .int32, .int64: if let number = raw as? NSNumber { values[name] = .int(number.int64Value) }
            case .double: if let number = raw as? NSNumber { values[name] = .double(number.doubleValue) }
            case .bool: if let flag = raw as? Bool { values[name] = .bool(flag) }
            case .date: if let number = raw as? NSNumber { values[name] = .date(Date(timeIntervalSince1970: number.doubleValue)) }
            }
        }
        return values
    }
}
