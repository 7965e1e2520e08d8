public import Foundation
import Synchronization

/// Names one object of one store, across contexts and queues: Sendable, Hashable, and
/// Codable as a URI string, `ingest://<store-uuid>/<Entity>/<key>`. A new object's ID
/// is temporary (key `t<n>`, unique in this process) until its first save; after it,
/// permanent (key: the row's number).
public struct ObjectID: Sendable, Hashable, CustomStringConvertible {
    public let storeID: UUID
    public let entityName: String
    let key: Key

    enum Key: Sendable, Hashable {
        case permanent(Int64)
        case temporary(UInt64)
    }

    private static let temporaryCounter = Atomic<UInt64>(0)

    /// A temporary ID no other object of this process has.
    static func temporary(storeID: UUID, entityName: String) -> ObjectID {
        let n = temporaryCounter.add(1, ordering: .relaxed).newValue
        return ObjectID(storeID: storeID, entityName: entityName, key: .temporary(n))
    }

    /// Hashes the key alone: contexts keep thousands of IDs in dictionaries, and the
    /// entity name and store ID rarely tell two IDs apart (equality still compares them).
    public func hash(into hasher: inout Hasher) {
        switch key {
        case .permanent(let pk): hasher.combine(pk)
        case .temporary(let n): hasher.combine(~n)
        }
    }

    init(storeID: UUID, entityName: String, key: Key) {
        self.storeID = storeID
        self.entityName = entityName
        self.key = key
    }

    public var isTemporary: Bool { if case .temporary = key { true } else { false } }

    /// The row number of a permanent ID.
    /// The row number of a saved object (nil while the ID is temporary).
    public var primaryKey: Int64? { if case .permanent(let pk) = key { pk } else { nil } }

    public var uri: String {
        let entity = entityName.addingPercentEncoding(withAllowedCharacters: Self.segmentCharacters) ?? entityName
        switch key {
        case .permanent(let pk): return "ingest://\(storeID.uuidString)/\(entity)/\(pk)"
        case .temporary(let n): return "ingest://\(storeID.uuidString)/\(entity)/t\(n)"
        }
    }

    /// Parses a URI made by `uri`; nil for anything else.
    public init?(uri: String) {
        guard uri.hasPrefix("ingest://") else { return nil }
        let parts = uri.dropFirst("ingest://".count).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, let store = UUID(uuidString: String(parts[0])),
              let entity = String(parts[1]).removingPercentEncoding, !entity.isEmpty else { return nil }
        let keyText = parts[2]
        if keyText.hasPrefix("t"), let n = UInt64(keyText.dropFirst()) {
            self.init(storeID: store, entityName: entity, key: .temporary(n))
        } else if let pk = Int64(keyText), pk > 0 {
            self.init(storeID: store, entityName: entity, key: .permanent(pk))
        } else {
            return nil
        }
    }

    public var description: String { uri }

    private static let segmentCharacters: CharacterSet = {
        var set = CharacterSet.urlPathAllowed
        set.remove(charactersIn: "/%")
        return set
    }()
}

extension ObjectID: Codable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = ObjectID(uri: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an object ID URI: \(text)"))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(uri)
    }
}
