public import Foundation

/// Where a consumer of a store's history stands: the history transactions it has been
/// given. Sendable and Codable, so a consumer can keep it with its own state; its text
/// form (`description`, `init?(_:)`) is what `ingest history --since` takes.
///
/// On SQLite a token is the position of the next history transaction: saves commit one at
/// a time, so positions are commit order. On PostgreSQL, where processes commit at once
/// and a transaction that took a lower ID may commit later, a token is the snapshot the
/// last fetch read in (`pg_current_snapshot()`): the transactions visible in it were
/// given, and the next fetch gives those visible now that were not visible then. A
/// transaction that commits later is never behind a token, and none comes twice.
///
/// A SQLite token also keeps a fingerprint of the transaction before its position (its
/// time, author and process): a store restored from a backup, or replaced by a copy (which
/// shares its ID), reuses positions with other transactions, and a fetch after such a token
/// is refused rather than answered with a silent gap. Tokens without one (written before
/// fingerprints) are read as before.
public struct HistoryToken: Sendable, Codable, Hashable, CustomStringConvertible, LosslessStringConvertible {
    /// The store the token belongs to.
    public let storeID: UUID
    /// Every history transaction below this position has been given (a purge before the
    /// token deletes those): on SQLite the next position, on PostgreSQL the xmin of the
    /// token's snapshot, or more within a page.
    public let position: Int64
    /// SQLite: the fingerprint of the transaction at `position - 1` (8 hex digits), when
    /// the token was taken after one.
    let fingerprint: String?
    /// PostgreSQL: the snapshot whose visible transactions were given (`xmin:xmax:xip,…`).
    let snapshot: String?
    /// PostgreSQL, within a fetch cut short by its limit: the snapshot it read in, and the
    /// last position it gave of those that snapshot sees.
    let page: Page?

    struct Page: Sendable, Codable, Hashable {
        var snapshot: String
        var after: Int64
    }

    /// A SQLite token: every transaction before `position` was given.
    public init(storeID: UUID, position: Int64) {
        self.init(storeID: storeID, position: position, fingerprint: nil)
    }

    /// A SQLite token that also names the transaction before `position` by its fingerprint.
    init(storeID: UUID, position: Int64, fingerprint: String?) {
        self.storeID = storeID
        self.position = position
        self.fingerprint = fingerprint
        snapshot = nil
        page = nil
    }

    /// Whether `text` is a fingerprint as `HistoryLog.fingerprint` writes it.
    static func isFingerprint(_ text: some StringProtocol) -> Bool {
        text.utf8.count == 8 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// A PostgreSQL token: the transactions `snapshot` sees were given, and of those
    /// `page` sees, the ones up to its position.
    init?(storeID: UUID, snapshot: String, page: Page? = nil) {
        guard let xmin = Self.xmin(of: snapshot) else { return nil }
        var given = xmin
        if let page {
            // Below the page snapshot's xmin everything is visible to it, so given up to `after`.
            guard let pageXmin = Self.xmin(of: page.snapshot) else { return nil }
            given = max(xmin, min(pageXmin, page.after + 1))
        }
        self.storeID = storeID
        self.snapshot = snapshot
        self.page = page
        fingerprint = nil
        position = given
    }

    /// Reads a token as `encode(to:)` wrote it, checking it as `init?(_:)` checks text.
    /// - Throws: `DecodingError.dataCorrupted` for a snapshot or position that is not one.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let store = try container.decode(UUID.self, forKey: .storeID)
        if let snapshot = try container.decodeIfPresent(String.self, forKey: .snapshot) {
            guard let token = HistoryToken(storeID: store, snapshot: snapshot, page: try container.decodeIfPresent(Page.self, forKey: .page)) else {
                throw DecodingError.dataCorruptedError(forKey: .snapshot, in: container, debugDescription: "not a PostgreSQL snapshot (xmin:xmax:xip,…): \(snapshot)")
            }
            self = token
        } else {
            let position = try container.decode(Int64.self, forKey: .position)
            guard position >= 0 else {
                throw DecodingError.dataCorruptedError(forKey: .position, in: container, debugDescription: "a history position is 0 or more, not \(position)")
            }
            let fingerprint = try container.decodeIfPresent(String.self, forKey: .fingerprint)
            if let fingerprint, !Self.isFingerprint(fingerprint) {
                throw DecodingError.dataCorruptedError(forKey: .fingerprint, in: container, debugDescription: "a history token's fingerprint is 8 hex digits, not \(fingerprint)")
            }
            self.init(storeID: store, position: position, fingerprint: fingerprint)
        }
    }

    /// The xmin of a snapshot's text (`xmin:xmax:xip,…`), or nil when it is not one.
    static func xmin(of snapshot: String) -> Int64? {
        let parts = snapshot.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, let xmin = Int64(parts[0]), let xmax = Int64(parts[1]), xmin <= xmax,
              parts[2].split(separator: ",").allSatisfy({ Int64($0) != nil }) else { return nil }
        return xmin
    }

    /// `POSITION[.FINGERPRINT]@STORE-ID` on SQLite (`1042.9f3a1c2e@6f1c…`); on PostgreSQL
    /// `SNAPSHOT[/PAGE-SNAPSHOT/AFTER]@STORE-ID` (`7410:7415:7412@6f1c…`).
    public var description: String {
        let store = "@" + storeID.uuidString.lowercased()
        guard let snapshot else { return "\(position)" + (fingerprint.map { "." + $0 } ?? "") + store }
        return snapshot + (page.map { "/\($0.snapshot)/\($0.after)" } ?? "") + store
    }

    /// Reads the text form `description` makes; nil for anything else.
    public init?(_ description: String) {
        let parts = description.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, let store = UUID(uuidString: String(parts[1])) else { return nil }
        let body = String(parts[0])
        if let position = Int64(body) {
            guard position >= 0 else { return nil }
            self.init(storeID: store, position: position)
            return
        }
        let dotted = body.split(separator: ".", omittingEmptySubsequences: false)
        if dotted.count == 2 {
            guard let position = Int64(dotted[0]), position >= 0, Self.isFingerprint(dotted[1]) else { return nil }
            self.init(storeID: store, position: position, fingerprint: String(dotted[1]))
            return
        }
        let pieces = body.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        switch pieces.count {
        case 1: self.init(storeID: store, snapshot: pieces[0])
        case 3:
            guard let after = Int64(pieces[2]) else { return nil }
            self.init(storeID: store, snapshot: pieces[0], page: Page(snapshot: pieces[1], after: after))
        default: return nil
        }
    }
}
