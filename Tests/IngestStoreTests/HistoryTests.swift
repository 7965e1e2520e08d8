import Foundation
import IngestTestSupport
import Testing
@testable import IngestStore

/// The store's history: every save recorded in its own transaction, fetched after a
/// token exactly once, merged into contexts of other coordinators, purged.
@Suite struct HistoryTests {
    /// A store on a PostgreSQL server of its own (a SQLite file on SQLite): no other test's
    /// open transaction holds back what a purge may delete. Keep the directory and server.
    /// Not a database on the shared server: there another test's open transaction kept the
    /// purge from removing anything (CI, 2026-12-01).
    static func storeOfItsOwn(on backend: StoreBackend) throws -> (PersistentStoreCoordinator, TemporaryDirectory, PostgresServer?) {
        let directory = try TemporaryDirectory()
        let server = backend == .postgres ? try PostgresServer() : nil
        let url = URL(string: server?.url ?? "file://" + directory.file("store.sqlite"))!
        return (try PersistentStoreCoordinator(model: TestModel.model, url: url), directory, server)
    }

    /// Each change as `kind entity row [properties] [tombstone]`, in order.
    static func lines(_ transactions: [HistoryTransaction]) -> [String] {
        transactions.flatMap { transaction in
            transaction.changes.map { change in
                var line = "\(change.kind.rawValue) \(change.entity) \(change.objectID.primaryKey!)"
                if !change.updatedProperties.isEmpty { line += " " + change.updatedProperties.joined(separator: ",") }
                if !change.tombstone.isEmpty { line += " " + change.tombstone.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",") }
                return line
            }
        }
    }

    @Test(arguments: StoreBackend.available) func everySaveRecordsItsInsertsUpdatesAndDeletesWithItsAuthor(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "editor")
        let start = try coordinator.currentHistoryToken()
        let (p1, p2) = try context.performAndWait {
            let ana = context.insert("Photographer")
            ana.id = .string("ana")
            let p1 = insertPhoto(context, id: "p1", title: "one")
            let p2 = insertPhoto(context, id: "p2")
            p1.setObject(ana, forKey: "whoTook")
            try context.save()
            return (p1.objectID, p2.objectID)
        }
        try context.performAndWait {
            let photo = context.object(with: p1)
            photo.title = .string("first")
            photo.views = .int(7)
            try context.save()
            context.transactionAuthor = "cleanup job"
            context.delete(context.object(with: p2))
            try context.save()
        }
        let fetch = try coordinator.fetchHistory(after: start)
        #expect(fetch.transactions.map(\.author) == ["editor", "editor", "cleanup job"])
        let ana = try context.performAndWait { try context.fetch("Photographer")[0].objectID.primaryKey! }
        let lines = Self.lines(fetch.transactions)
        let (k1, k2): (Int64, Int64) = (p1.primaryKey!, p2.primaryKey!)
        let inserts: Set<String> = ["insert Photographer \(ana)", "insert Photo \(k1)", "insert Photo \(k2)"]
        #expect(Set(lines.prefix(3)) == inserts)
        let changes: [String] = ["update Photo \(k1) title,views", "delete Photo \(k2) id=\"p2\""]
        #expect(Array(lines.dropFirst(3)) == changes)
        #expect(fetch.transactions.allSatisfy { $0.process.hasSuffix(":\(getpid())") })
        if backend.speaksSQLite {
            #expect(fetch.transactions.map(\.token.position) == fetch.transactions.map { $0.position + 1 })
            #expect(fetch.transactions.allSatisfy { $0.token.storeID == coordinator.storeID && $0.token.fingerprint != nil })
        }
        // Nothing after the returned token, and the IDs are the saved objects'.
        #expect(try coordinator.fetchHistory(after: fetch.token).transactions.isEmpty)
        #expect(fetch.changes.first { $0.kind == .delete }?.objectID == p2)
        // From any transaction's token on: the rest, exactly.
        #expect(try coordinator.fetchHistory(after: fetch.transactions[1].token).transactions.map(\.position) == [fetch.transactions[2].position])
    }

    @Test(arguments: StoreBackend.available) func aRelationshipChangeNamesTheRelationshipOnBothSides(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "tagger")
        let (photo, tag) = try context.performAndWait {
            let photo = insertPhoto(context, id: "p")
            let tag = context.insert("Tag")
            tag.name = "sea"
            try context.save()
            return (photo.objectID, tag.objectID)
        }
        let token = try coordinator.currentHistoryToken()
        try context.performAndWait {
            context.object(with: photo).addObject(context.object(with: tag), toKey: "tags")
            try context.save()
        }
        #expect(Set(Self.lines(try coordinator.fetchHistory(after: token).transactions))
                == ["update Photo \(photo.primaryKey!) tags", "update Tag \(tag.primaryKey!) photos"])
    }

    @Test(arguments: StoreBackend.reopenable) func aContextOfAnotherCoordinatorFollowsRandomSavesThroughHistoryAlone(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        // A second coordinator on the same store: no save notice reaches it, as in another process.
        let other = try PersistentStoreCoordinator(model: TestModel.model, url: URL(string: backend == .sqlite ? "file://" + coordinator.path : coordinator.path)!)
        let writer = ObjectContext(coordinator: coordinator, name: "writer")
        let viewer = ObjectContext(coordinator: other, name: "viewer")
        var token = try other.currentHistoryToken()
        let request = FetchRequest("Photo", sortDescriptors: [FetchSortDescriptor("title"), FetchSortDescriptor("id")])
        let controller = try viewer.performAndWait { () throws -> FetchedResultsController in
            let controller = try FetchedResultsController(request: request, context: viewer, sectionNameKeyPath: "title")
            try controller.performFetch()
            return controller
        }
        var seed: UInt64 = 0x5eed
        func next(_ bound: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(bound))
        }
        var counter = 0
        for _ in 0..<60 {
            try writer.performAndWait {
                for _ in 0..<(1 + next(3)) {
                    let existing = try writer.fetch("Photo")
                    switch existing.isEmpty ? 0 : next(6) {
                    case 0, 1:
                        counter += 1
                        insertPhoto(writer, id: "p\(counter)", title: ["A", "B", "C"][next(3)])
                    case 2, 3:
                        existing[next(existing.count)].title = .string(["A", "B", "C", "D"][next(4)])
                    default:
                        writer.delete(existing[next(existing.count)])
                    }
                }
                try writer.save()
            }
            let fetch = try other.fetchHistory(after: token)
            token = fetch.token
            try viewer.performAndWait {
                viewer.mergeChanges(fromHistory: fetch.transactions)
                let fresh = try viewer.fetch(request)
                #expect(controller.fetchedObjects.map(\.objectID) == fresh.map(\.objectID))
                #expect(controller.sections.map(\.name) == Array(Set(fresh.compactMap { $0.title?.stringValue })).sorted())
                #expect(controller.fetchedObjects.map { $0.title?.stringValue } == fresh.map { $0.title?.stringValue })
            }
        }
    }

    /// On PostgreSQL a purge keeps what committed after a transaction still open began (it
    /// could yet commit before them): a server of its own, so no other test holds one open.
    @Test(arguments: StoreBackend.available) func aTokenFromBeforeAPurgeIsRefusedNotAnsweredWithAGap(backend: StoreBackend) throws {
        let (coordinator, directory, server) = try Self.storeOfItsOwn(on: backend)
        _ = (directory, server)
        let context = ObjectContext(coordinator: coordinator, name: "writer")
        let old = try coordinator.currentHistoryToken()
        for number in 0..<3 {
            try context.performAndWait {
                insertPhoto(context, id: "p\(number)")
                try context.save()
            }
        }
        let all = try coordinator.fetchHistory(after: old)
        #expect(all.transactions.count == 3)
        try coordinator.purgeHistory(before: all.transactions[1].token)
        let horizon = all.transactions[1].token.position
        #expect(throws: StoreError.historyPurged(token: old.description, purgedBefore: "\(horizon)")) {
            try coordinator.fetchHistory(after: old)
        }
        let message = "\(StoreError.historyPurged(token: old.description, purgedBefore: "\(horizon)"))"
        #expect(message == "history token \(old) is from before the history was purged (it keeps positions from \(horizon) on): the changes after it are gone; fetch the objects afresh and continue from the current token (coordinator.currentHistoryToken(), or the last line of ingest history)")
        // From the purge's token on, and from the start (nil), what is kept.
        #expect(try coordinator.fetchHistory(after: all.transactions[1].token).transactions.map(\.position) == [all.transactions[2].position])
        #expect(try coordinator.fetchHistory(after: nil).transactions.map(\.position) == [all.transactions[2].position])
    }

    @Test func aTokenOfAnotherStoreIsRefusedAndTokensReadBackFromTheirText() throws {
        let (first, directory) = try TestModel.store()
        let second = try PersistentStoreCoordinator(model: TestModel.model, path: directory.file("other.sqlite"))
        let token = try second.currentHistoryToken()
        #expect(HistoryToken(token.description) == token)
        #expect(HistoryToken("12") == nil && HistoryToken("x@\(token.storeID)") == nil && HistoryToken("-1@\(token.storeID)") == nil)
        let decoded = try JSONDecoder().decode(HistoryToken.self, from: JSONEncoder().encode(token))
        #expect(decoded == token)
        #expect(throws: StoreError.history("token \(token) is of store \(token.storeID.uuidString.lowercased()), not of \(first.path) (\(first.storeID.uuidString.lowercased()))")) {
            try first.fetchHistory(after: token)
        }
    }

    @Test(arguments: StoreBackend.available) func aCoordinatorWithHistoryOffRecordsNothing(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let token = try coordinator.currentHistoryToken()
        coordinator.recordsHistory = false
        let context = ObjectContext(coordinator: coordinator, name: "quiet")
        try context.performAndWait {
            insertPhoto(context, id: "p")
            try context.save()
        }
        #expect(try coordinator.fetchHistory(after: token).transactions.isEmpty)
        coordinator.recordsHistory = true
        try context.performAndWait {
            insertPhoto(context, id: "q")
            try context.save()
        }
        #expect(try coordinator.fetchHistory(after: token).transactions.count == 1)
    }

    @Test(arguments: StoreBackend.reopenable) func theHistoryStreamWakesForSavesOfAnotherCoordinator(backend: StoreBackend) async throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let other = try PersistentStoreCoordinator(model: TestModel.model, url: URL(string: backend == .sqlite ? "file://" + coordinator.path : coordinator.path)!)
        let token = try other.currentHistoryToken()
        let writer = Task.detached {
            let context = ObjectContext(coordinator: coordinator, name: "writer")
            for number in 0..<5 {
                try context.performAndWait {
                    insertPhoto(context, id: "p\(number)")
                    try context.save()
                }
                try await Task.sleep(for: .milliseconds(30))
            }
        }
        var seen: [HistoryTransaction] = []
        for try await transaction in other.history(after: token, interval: .milliseconds(20)) {
            seen.append(transaction)
            if seen.count == 5 { break }
        }
        try await writer.value
        #expect(seen.map { $0.changes.count } == [1, 1, 1, 1, 1])
        #expect(seen.map(\.position) == seen.map(\.position).sorted())
    }

    /// More transactions than the stream holds for its reader (1,000): its thread waits for
    /// the reader to take some, and every one comes, once, in order.
    @Test func aHistoryStreamAheadOfItsReaderWaitsAndDropsNone() async throws {
        let (coordinator, directory) = try TestModel.store(on: .sqlite)
        defer { withExtendedLifetime(directory) {} }
        let token = try coordinator.currentHistoryToken()
        let context = ObjectContext(coordinator: coordinator, name: "writer")
        for number in 0..<1_250 {
            try context.performAndWait {
                insertPhoto(context, id: "p\(number)")
                try context.save()
            }
        }
        var seen: [HistoryTransaction] = []
        let stream = coordinator.history(after: token, interval: .milliseconds(20))
        // The thread fills what the stream holds and waits, while the reader is away.
        try await Task.sleep(for: .milliseconds(300))
        for try await transaction in stream {
            seen.append(transaction)
            if seen.count == 1_250 { break }
        }
        #expect(seen.count == 1_250)
        let positions = seen.map(\.position)
        #expect(positions == positions.sorted())
        #expect(Set(positions).count == 1_250)
    }

    @Test(arguments: StoreBackend.available) func deletesAndUnlinksNameEveryRowTheyChangeAndBothSidesOfALink(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "editor")
        let (ana, bo, photos, tag) = try context.performAndWait {
            let ana = context.insert("Photographer")
            ana.id = .string("ana")
            let bo = context.insert("Photographer")
            bo.id = .string("bo")
            let photos = (0..<3).map { insertPhoto(context, id: "p\($0)") }
            for photo in photos { photo.setObject(ana, forKey: "whoTook") }
            let tag = context.insert("Tag")
            tag.name = .string("sea")
            try context.save()
            return (ana.objectID, bo.objectID, photos.map(\.objectID), tag.objectID)
        }
        func changes(_ body: () throws -> Void) throws -> Set<String> {
            let token = try coordinator.currentHistoryToken()
            try context.performAndWait {
                context.reset()
                try body()
                try context.save()
            }
            return Set(Self.lines(try coordinator.fetchHistory(after: token).transactions))
        }
        // A to-one moved: the photo, its old and its new photographer.
        #expect(try changes { context.object(with: photos[0]).setObject(context.object(with: bo), forKey: "whoTook") }
                == ["update Photo \(photos[0].primaryKey!) whoTook", "update Photographer \(ana.primaryKey!) photos",
                    "update Photographer \(bo.primaryKey!) photos"])
        // A many-to-many link between two objects never loaded (faults): both sides.
        #expect(try changes { context.object(with: photos[1]).addObject(context.object(with: tag), toKey: "tags") }
                == ["update Photo \(photos[1].primaryKey!) tags", "update Tag \(tag.primaryKey!) photos"])
        // A delete (nullify): the photos it unlinked, registered or not, and its key as it was stored.
        #expect(try changes {
            let photographer = context.object(with: ana)
            photographer.id = .string("renamed")
            context.delete(photographer)
        } == ["delete Photographer \(ana.primaryKey!) id=\"ana\"", "update Photo \(photos[1].primaryKey!) whoTook",
              "update Photo \(photos[2].primaryKey!) whoTook"])
        // A delete that drops join rows: the other side of each.
        #expect(try changes { context.delete(context.object(with: tag)) }
                == ["delete Tag \(tag.primaryKey!) name=\"sea\"", "update Photo \(photos[1].primaryKey!) tags"])
    }

    /// PostgreSQL takes at most 65,535 parameters a statement: the changes of a save go in parts.
    @Test(arguments: StoreBackend.available) func aSaveDeletingTenThousandObjectsRecordsEveryDelete(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let context = ObjectContext(coordinator: coordinator, name: "bulk")
        try context.performAndWait {
            for number in 0..<10_000 { context.insert("Tag").name = .string("t\(number)") }
            try context.save()
        }
        let token = try coordinator.currentHistoryToken()
        try context.performAndWait {
            for tag in try context.fetch("Tag") { context.delete(tag) }
            try context.save()
        }
        let deletes = try coordinator.fetchHistory(after: token).changes
        #expect(deletes.count == 10_000 && deletes.allSatisfy { $0.kind == .delete })
        #expect(Set(deletes.compactMap { $0.tombstone["name"]?.stringValue }).count == 10_000)
    }

    /// A consumer takes its token before it fetches, so changes between the two come again:
    /// merged twice, they leave the controller as a fresh fetch would.
    @Test(arguments: StoreBackend.available) func changesThatComeAgainLeaveTheControllerAsAFreshFetch(backend: StoreBackend) throws {
        let (coordinator, directory) = try TestModel.store(on: backend)
        defer { withExtendedLifetime(directory) {} }
        let writer = ObjectContext(coordinator: coordinator, name: "writer")
        let viewer = ObjectContext(coordinator: coordinator, name: "viewer")
        let token = try coordinator.currentHistoryToken()
        let (x, y) = try writer.performAndWait {
            let x = insertPhoto(writer, id: "x", title: "A")
            let y = insertPhoto(writer, id: "y", title: "B")
            try writer.save()
            return (x.objectID, y.objectID)
        }
        let request = FetchRequest("Photo", sortDescriptors: [FetchSortDescriptor("title")])
        let controller = try viewer.performAndWait { () throws -> FetchedResultsController in
            let controller = try FetchedResultsController(request: request, context: viewer, sectionNameKeyPath: "title")
            try controller.performFetch()
            return controller
        }
        try writer.performAndWait {
            writer.object(with: x).title = .string("C")
            writer.delete(writer.object(with: y))
            try writer.save()
        }
        let fetch = try coordinator.fetchHistory(after: token)
        #expect(fetch.transactions.count == 2)
        viewer.performAndWait {
            viewer.mergeChanges(fromHistory: fetch.transactions)
            #expect(controller.fetchedObjects.map(\.objectID) == [x])
            #expect(controller.sections.map(\.name) == ["C"])
            #expect(controller.fetchedObjects.map { $0.title?.stringValue } == ["C"])
        }
    }

    /// A server of its own on PostgreSQL, as `aTokenFromBeforeAPurgeIsRefusedNotAnsweredWithAGap`.
    @Test(arguments: StoreBackend.available) func purgesRefuseTokensAheadOfTheStoreAndDatesNeverPurgePastNow(backend: StoreBackend) throws {
        let (coordinator, directory, server) = try Self.storeOfItsOwn(on: backend)
        _ = (directory, server)
        let context = ObjectContext(coordinator: coordinator, name: "writer")
        let start = try coordinator.currentHistoryToken()
        try context.performAndWait {
            insertPhoto(context, id: "p")
            try context.save()
        }
        let ahead = backend.speaksSQLite ? HistoryToken(storeID: coordinator.storeID, position: 1_000_000)
            : HistoryToken("999999999:999999999:@\(coordinator.storeID.uuidString.lowercased())")!
        #expect(throws: StoreError.self) { try coordinator.purgeHistory(before: ahead) }
        // A date in the future purges what is there, and the current token still reads on.
        try coordinator.purgeHistory(before: Date.now.addingTimeInterval(3_600))
        let now = try coordinator.currentHistoryToken()
        #expect(try coordinator.fetchHistory(after: now).transactions.isEmpty)
        #expect(throws: StoreError.self) { try coordinator.fetchHistory(after: start) }
    }

    @Test func aDamagedSavedTokenIsRefusedWhenRead() throws {
        let store = UUID()
        let damaged = Data(#"{"storeID":"\#(store.uuidString)","position":0,"snapshot":"x:y:"}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(HistoryToken.self, from: damaged) }
        let negative = Data(#"{"storeID":"\#(store.uuidString)","position":-4}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(HistoryToken.self, from: negative) }
    }

    @Test func rowListsKeepRunsAsRanges() {
        #expect(RowList.text([5, 1, 2, 3, 3, 9, 10, 7]) == "1-3,5,7,9-10")
        #expect(RowList.rows("1-3,5,7,9-10") == [1, 2, 3, 5, 7, 9, 10])
        #expect(RowList.rows("3-1") == nil && RowList.rows("a") == nil)
    }
}
