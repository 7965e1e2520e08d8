import Foundation

/// A position in sectioned results.
public struct ResultPosition: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var section: Int
    public var item: Int

    public init(item: Int, section: Int) {
        self.item = item
        self.section = section
    }

    public static func < (a: ResultPosition, b: ResultPosition) -> Bool { (a.section, a.item) < (b.section, b.item) }
    public var description: String { "[\(section), \(item)]" }
}

/// What one merge or save did to a controller's results, in the terms a table or
/// collection view applies in one batch: deletions and moves' sources at old index
/// paths, insertions and moves' destinations at new ones, section deletions at old
/// indexes and insertions at new ones; updates at old index paths.
public struct ResultsChange: Sendable, Equatable {
    public var deletedSections: [(index: Int, name: String)] = []
    public var insertedSections: [(index: Int, name: String)] = []
    public var deleted: [(at: ResultPosition, id: ObjectID)] = []
    public var inserted: [(at: ResultPosition, id: ObjectID)] = []
    public var moved: [(from: ResultPosition, to: ResultPosition, id: ObjectID)] = []
    public var updated: [(at: ResultPosition, id: ObjectID)] = []

    public var isEmpty: Bool {
        deletedSections.isEmpty && insertedSections.isEmpty && deleted.isEmpty && inserted.isEmpty && moved.isEmpty && updated.isEmpty
    }

    public static func == (a: ResultsChange, b: ResultsChange) -> Bool {
        a.deletedSections.elementsEqual(b.deletedSections, by: ==) && a.insertedSections.elementsEqual(b.insertedSections, by: ==)
            && a.deleted.elementsEqual(b.deleted, by: ==) && a.inserted.elementsEqual(b.inserted, by: ==)
            && a.moved.elementsEqual(b.moved, by: ==) && a.updated.elementsEqual(b.updated, by: ==)
    }
}

/// Told about every change to a controller's results.
public protocol FetchedResultsControllerDelegate: AnyObject {
    func controller(_ controller: FetchedResultsController, didChange change: ResultsChange)
}

/// The results of a fetch request, in sections, kept up to date as its context changes
/// (its unsaved changes told at the end of each perform block, unless the request's
/// `includesPendingChanges` is false), saves, or merges other contexts' saves — by applying
/// each change to the results it holds, not by fetching everything again. After the
/// context's `reset()`, call `performFetch()` again.
///
/// Not Sendable: use it on its context's queue. Its changes also arrive as an
/// `AsyncStream` (`changes`), whose elements are Sendable; the stream is made when first
/// asked for, so a controller followed through its delegate alone keeps no change.
public final class FetchedResultsController {
    public struct Section {
        public var name: String
        public var objects: [ManagedObject]
        public var count: Int { objects.count }
    }

    public let request: FetchRequest
    public let context: ObjectContext
    /// The key path whose value names each object's section; it must also be the first sort key.
    public let sectionNameKeyPath: String?
    public weak var delegate: (any FetchedResultsControllerDelegate)?
    public private(set) var sections: [Section] = []
    /// The most changes `changes` keeps, by default, for a reader that is behind.
    public static let defaultChangesBufferLimit = 100
    /// What `changes` keeps for a reader that is behind, read when the stream is made (set
    /// it before first asking for `changes`). By default the newest
    /// `defaultChangesBufferLimit` changes: a reader that falls further behind misses the
    /// oldest ones, so it should read `sections` afresh (on the context's queue) rather
    /// than apply the rest to a state it no longer has. `.unbounded` keeps every change,
    /// as long as the reader is behind.
    public var changesBufferingPolicy = AsyncStream<ResultsChange>.Continuation.BufferingPolicy.bufferingNewest(
        FetchedResultsController.defaultChangesBufferLimit)
    /// Every change from the first time this is asked for on, in order, as the delegate
    /// hears them: nothing is kept before a reader asks (the delegate alone costs no
    /// memory), and what is kept for a reader that is behind follows
    /// `changesBufferingPolicy`. One reader at a time: asking again returns the same stream
    /// until its reader stops (its task cancelled), then a new one.
    public var changes: AsyncStream<ResultsChange> { changeStream.stream(changesBufferingPolicy) }
    let changeStream = ResultsChangeStream()
    private var fetched = false

    /// - Throws: `QueryPredicateError` when the request has no sort descriptor, or the
    ///   section key is not its first sort key.
    public init(request: FetchRequest, context: ObjectContext, sectionNameKeyPath: String? = nil) throws {
        guard let first = request.sortDescriptors.first else {
            throw QueryPredicateError("a fetched results controller needs at least one sort descriptor", column: 0)
        }
        if let sectionNameKeyPath, first.keyPath != sectionNameKeyPath {
            throw QueryPredicateError("the section key \(sectionNameKeyPath) must be the first sort key (it is \(first.keyPath))", column: 0)
        }
        self.request = request
        self.context = context
        self.sectionNameKeyPath = sectionNameKeyPath
    }

    deinit {
        // The listener the context keeps holds this controller weakly and does nothing
        // once it is gone; removing it here could race with the context's queue.
        changeStream.finish()
    }

    /// Runs the fetch and starts following the context's changes, saves and merges.
    /// - Throws: as `ObjectContext.fetch(_:)`.
    public func performFetch() throws {
        context.checkAccess()
        sections = group(try context.fetch(request))
        if !fetched {
            fetched = true
            context.changeListeners[ObjectIdentifier(self)] = { [weak self] notice in self?.apply(notice) }
            // The context's unsaved changes, as Core Data's controller reports them (at the
            // end of each perform block), unless the request leaves them out.
            if request.includesPendingChanges {
                context.objectChangeListeners[ObjectIdentifier(self)] = { [weak self] change in
                    guard let self else { return false }
                    apply(change)
                    return true
                }
            }
        }
    }

    /// Every object in order.
    public var fetchedObjects: [ManagedObject] { sections.flatMap(\.objects) }

    public func object(at indexPath: ResultPosition) -> ManagedObject { sections[indexPath.section].objects[indexPath.item] }

    // MARK: - Following changes

    /// A save or a merge. The context's own save was told already, change by change, when
    /// the controller follows its unsaved changes: the results are checked again (a merge
    /// policy may have changed values, or made a new object one with a shown one), but
    /// only what that moves is told.
    private func apply(_ notice: SaveNotice) {
        let told = request.includesPendingChanges && notice.contextIdentity == ObjectIdentifier(context)
        apply(inserted: notice.inserted, updated: notice.updated, deleted: notice.deleted, tellingUpdates: !told)
    }

    /// The context's own changes, not saved yet.
    private func apply(_ change: ObjectsDidChange) {
        apply(inserted: change.inserted, updated: change.updated.union(change.refreshed), deleted: change.deleted)
    }

    private func apply(inserted: Set<ObjectID>, updated: Set<ObjectID>, deleted: Set<ObjectID>, tellingUpdates: Bool = true) {
        let entity = request.entityName
        let info = context.entityInfo(entity)
        // IDs name their hierarchy's root: which entity an object is, its row says (below).
        let touched = inserted.union(updated).union(deleted).filter { $0.entityName == info.rootName }
        guard !touched.isEmpty else { return }
        let old = sections
        var flat = old.flatMap(\.objects)
        // An insert of an object shown already (a change that came twice through history) moves it, never doubles it.
        let leaving = deleted.union(updated).union(inserted)
        flat.removeAll { leaving.contains($0.objectID) }
        let candidates = inserted.union(updated).filter { $0.entityName == info.rootName }
        try? context.preloadRows(Array(candidates), info.rootName == entity ? info : context.entityInfo(info.rootName))
        var arriving: [ManagedObject] = []
        for id in candidates {
            let object = context.object(with: id)
            guard request.includesSubentities ? info.includes(object.info) : object.info === info else { continue }
            // Still a fault after the preload: its row is gone (deleted by a save not merged yet).
            if object.isFault && !object.preloaded { continue }
            guard !object.isDeleted, (try? request.predicate.map { try $0.evaluate(with: object) } ?? true) == true else { continue }
            arriving.append(object)
        }
        for object in arriving {
            let index = insertionIndex(for: object, in: flat)
            flat.insert(object, at: index)
        }
        // A window ("top 5") cannot be kept by merging alone: an object that leaves lets the
        // next one in, which the notice does not name. The request is asked again (a
        // failure keeps the merged list, as a failed preload does above).
        if (request.fetchLimit ?? 0) > 0 || request.fetchOffset > 0, let windowed = try? context.fetch(request) {
            flat = windowed
        }
        let new = group(flat)
        sections = new
        let change = Self.diff(old: old, new: new, updated: tellingUpdates ? updated : [])
        guard !change.isEmpty else { return }
        delegate?.controller(self, didChange: change)
        changeStream.yield(change)
    }

    private func group(_ objects: [ManagedObject]) -> [Section] {
        guard let sectionNameKeyPath else { return objects.isEmpty ? [] : [Section(name: "", objects: objects)] }
        var result: [Section] = []
        for object in objects {
            let name = sectionName(of: object, sectionNameKeyPath)
            if result.last?.name == name {
                result[result.count - 1].objects.append(object)
            } else {
                result.append(Section(name: name, objects: [object]))
            }
        }
        return result
    }

    private func sectionName(of object: ManagedObject, _ keyPath: String) -> String {
        let expression = PredicateExpression.keyPath(keyPath.split(separator: ".").map(String.init))
        guard case .single(let value)? = try? PredicateComparison.resolve(expression, object, allowMany: false), let value else { return "" }
        if case .string(let text) = value { return text }
        return value.description
    }

    /// Binary search with the request's sort order (NULLs first, ties by row number).
    private func insertionIndex(for object: ManagedObject, in objects: [ManagedObject]) -> Int {
        var low = 0
        var high = objects.count
        while low < high {
            let mid = (low + high) / 2
            if ordered(objects[mid], before: object) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    private func ordered(_ a: ManagedObject, before b: ManagedObject) -> Bool {
        FetchSortDescriptor.ordered(a, before: b, by: request.sortDescriptors)
    }

    /// The changes that turn `old` into `new`: objects whose section changed, or that
    /// fell out of the longest run kept in order, move; the rest stay (and are reported
    /// updated when the notice says so).
    static func diff(old: [Section], new: [Section], updated: Set<ObjectID>) -> ResultsChange {
        var change = ResultsChange()
        var oldPaths: [ObjectID: (ResultPosition, String)] = [:]
        for (s, section) in old.enumerated() {
            for (i, object) in section.objects.enumerated() { oldPaths[object.objectID] = (ResultPosition(item: i, section: s), section.name) }
        }
        var newPaths: [ObjectID: (ResultPosition, String)] = [:]
        for (s, section) in new.enumerated() {
            for (i, object) in section.objects.enumerated() { newPaths[object.objectID] = (ResultPosition(item: i, section: s), section.name) }
        }
        let oldNames = Set(old.map(\.name))
        let newNames = Set(new.map(\.name))
        change.deletedSections = old.enumerated().filter { !newNames.contains($0.element.name) }.map { ($0.offset, $0.element.name) }
        change.insertedSections = new.enumerated().filter { !oldNames.contains($0.element.name) }.map { ($0.offset, $0.element.name) }
        for (id, (path, _)) in oldPaths where newPaths[id] == nil { change.deleted.append((path, id)) }
        for (id, (path, _)) in newPaths where oldPaths[id] == nil { change.inserted.append((path, id)) }
        // Within each section kept, the objects that stay put are the longest run whose
        // order did not change; everything else kept moves.
        var stays = Set<ObjectID>()
        for section in new where oldNames.contains(section.name) {
            let common = section.objects.map(\.objectID).filter { oldPaths[$0]?.1 == section.name }
            let oldOrder = common.map { oldPaths[$0]!.0.item }
            for index in longestIncreasingRun(oldOrder) { stays.insert(common[index]) }
        }
        for (id, (newPath, _)) in newPaths {
            guard let (oldPath, _) = oldPaths[id] else { continue }
            if stays.contains(id) {
                if updated.contains(id) { change.updated.append((oldPath, id)) }
            } else {
                change.moved.append((oldPath, newPath, id))
            }
        }
        change.deleted.sort { $0.at < $1.at }
        change.inserted.sort { $0.at < $1.at }
        change.moved.sort { $0.to < $1.to }
        change.updated.sort { $0.at < $1.at }
        return change
    }

    /// Indexes (into `values`) of one longest strictly increasing subsequence.
    static func longestIncreasingRun(_ values: [Int]) -> [Int] {
        var tails: [Int] = []          // index into values of the smallest tail per length
        var previous = Array(repeating: -1, count: values.count)
        for (i, value) in values.enumerated() {
            var low = 0, high = tails.count
            while low < high {
                let mid = (low + high) / 2
                if values[tails[mid]] < value { low = mid + 1 } else { high = mid }
            }
            if low > 0 { previous[i] = tails[low - 1] }
            if low == tails.count { tails.append(i) } else { tails[low] = i }
        }
        var result: [Int] = []
        var k = tails.last ?? -1
        while k >= 0 {
            result.append(k)
            k = previous[k]
        }
        return result.reversed()
    }
}

@available(*, unavailable, message: "a results controller belongs to its context's queue")
extension FetchedResultsController: Sendable {}
