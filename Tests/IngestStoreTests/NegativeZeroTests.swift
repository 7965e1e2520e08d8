import IngestTestSupport
import Testing
@testable import IngestStore

/// A double of negative zero reads back as zero on every backend: SQLite keeps a REAL
/// without a fraction as an integer, so its zero has no sign, and the others store what
/// one SQLite worker stores.
@Suite struct NegativeZeroTests {
    static let model = Model(entities: [
        Entity("Point", attributes: [
            Attribute("id", .string, optional: false),
            Attribute("x", .double),
            Attribute("y", .double),
        ], uniquenessConstraints: [["id"]]),
    ])

    @Test(arguments: StoreBackend.available)
    func negativeZeroSavedFromAContextReadsBackAsZero(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(Self.model, on: backend)
        defer { withExtendedLifetime(directory) {} }
        let writer = ObjectContext(coordinator: coordinator)
        try writer.performAndWait {
            let point = writer.insert("Point")
            point.id = "p1"
            point.x = .double(-0.0)
            point.y = .double(-1.5)
            try writer.save()
        }
        let reader = ObjectContext(coordinator: coordinator)
        try reader.performAndWait {
            let point = try #require(try reader.fetch("Point").first)
            guard case .double(let x)? = point.x, case .double(let y)? = point.y else {
                Issue.record("x \(String(describing: point.x)), y \(String(describing: point.y))")
                return
            }
            #expect(x == 0 && x.sign == .plus, "\(x)")
            #expect(y == -1.5)
        }
    }
}
