public import Foundation
import Synchronization

/// A store and the contexts an app uses on it, set up in one call, as Core Data's
/// `NSPersistentContainer`: a coordinator on the store, a main-queue ``viewContext`` that
/// merges every save made through that coordinator, and private-queue contexts for work
/// in the background (``newBackgroundContext()``, `performBackgroundTask(_:)`).
///
/// ```swift
/// let container = try PersistentContainer(model: model, url: URL(fileURLWithPath: "photos.sqlite"))
/// try await container.performBackgroundTask { context in
///     context.insert("Photo")["id"] = .string("p1")
///     try context.save()
/// }
/// // On the main actor: the view context merged the save.
/// let photos = try container.viewContext.fetch("Photo")
/// ```
///
/// The store is opened by the initializer, which throws when it cannot be, instead of a
/// `loadPersistentStores(completionHandler:)` step after it: a container holds exactly one
/// store, opening it is synchronous here, and a container whose store failed to load would
/// only be a coordinator-less shell every later call had to check. (Core Data's two steps
/// exist for its store descriptions, several stores and asynchronous loading, none of
/// which Ingest has.)
///
/// Sendable: hand it to any task. The view context is the main actor's (it is made there,
/// on first use); everything else may be used from anywhere.
public final class PersistentContainer: Sendable {
    /// The coordinator every context of the container works through. An `Importer` made on
    /// it (IngestPipeline) saves through it, so the view context merges the import's saves.
    public let persistentStoreCoordinator: PersistentStoreCoordinator
    /// The name the view context is given; background contexts are named after it.
    public let name: String
    private let backgroundCount = Atomic<Int>(0)
    @MainActor private var mainContext: ObjectContext?

    /// The model of the container's store.
    public var model: Model { persistentStoreCoordinator.model }

    /// A container on the store `url` names: a `file:` URL (or a path without a scheme) is
    /// a SQLite file, created when there is none; `postgresql:` (or `postgres:`) a
    /// PostgreSQL database; `memory:` a new store held in memory. The locations are
    /// `PersistentStoreCoordinator(model:url:)`'s.
    /// - Throws: `StoreError.notAStore` for a URL of another scheme, or a file that is not
    ///   an Ingest store; `StoreError.modelMismatch` when the store holds another model;
    ///   `StoreError.postgres` when the server cannot be reached; `ModelError` for an
    ///   invalid model; `StoreError.database` for SQLite's other failures (a directory
    ///   that does not exist, say).
    public convenience init(model: Model, url: URL, name: String = "view") throws {
        self.init(coordinator: try PersistentStoreCoordinator(model: model, url: url), name: name)
    }

    /// A container on the SQLite store at `path`, created when there is no file there.
    /// - Throws: as `init(model:url:)`.
    public convenience init(model: Model, path: String, name: String = "view") throws {
        self.init(coordinator: try PersistentStoreCoordinator(model: model, path: path), name: name)
    }

    /// A container on a new store held in memory only (Core Data's `NSInMemoryStoreType`):
    /// gone with the container. An importer reaches it only through this container's
    /// coordinator (`Importer(spec:options:coordinator:)`).
    /// - Throws: `ModelError` for an invalid model.
    public convenience init(inMemory model: Model, name: String = "view") throws {
        self.init(coordinator: try PersistentStoreCoordinator(inMemory: model), name: name)
    }

    /// A container on a coordinator already open (one made read-only, or with options the
    /// other initializers do not take).
    public init(coordinator: PersistentStoreCoordinator, name: String = "view") {
        persistentStoreCoordinator = coordinator
        self.name = name
    }

    /// The main-queue context the user interface reads, made on first use. It merges every
    /// save of another context on the container's coordinator (background contexts,
    /// an importer's workers and batch writes) as it happens, on the main queue.
    @MainActor public var viewContext: ObjectContext {
        if let mainContext { return mainContext }
        let context = ObjectContext(.main, coordinator: persistentStoreCoordinator, name: name)
        context.performAndWait { context.automaticallyMergesChangesFromCoordinator = true }
        mainContext = context
        return context
    }

    /// A new private-queue context on the container's coordinator, for work off the main
    /// queue. Its saves reach the view context; it does not merge other contexts' saves
    /// itself (set `automaticallyMergesChangesFromCoordinator` inside its `perform` for that).
    public func newBackgroundContext() -> ObjectContext {
        let number = backgroundCount.add(1, ordering: .relaxed).newValue
        return ObjectContext(.privateQueue, coordinator: persistentStoreCoordinator, name: "\(name)-background-\(number)")
    }

    /// Runs `body` on a new background context's queue and returns at once, as Core Data's
    /// `performBackgroundTask(_:)`: `body` saves what it wants kept; the context is gone
    /// after it. What `body` saves reaches the view context.
    public func performBackgroundTask(_ body: @escaping @Sendable (ObjectContext) -> Void) {
        newBackgroundContext().perform(body)
    }

    /// Runs `body` on a new background context's queue and returns what it returns, as
    /// Core Data's async `performBackgroundTask(_:)`: `body` saves what it wants kept.
    /// - Throws: what `body` throws.
    public func performBackgroundTask<T: Sendable>(_ body: @escaping @Sendable (ObjectContext) throws -> T) async throws -> T {
        try await newBackgroundContext().perform(body)
    }
}
